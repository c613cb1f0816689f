"""Writer of delivery notes: the goods handed over, without prices, signed for on receipt.

It shares parties, numbers and items with corpus.commercial's documents of the same sale.
"""

from __future__ import annotations

import random

from corpus import fakes as fk
from corpus.layout import table
from corpus.paper import GRID_SHARE, addressee, fmt, heading, letterhead, pages, salutation, size


def delivery_note(rng: random.Random) -> str:
    """A shipper's list of goods handed over: quantities, packages, carrier, receipt signature."""
    shipper, consignee = fk.party(rng), fk.party(rng)
    style, shipped = fk.date_style(rng), fk.date(rng)
    no = fk.number(rng, ("DN", "LS", "DEL", "SHP"), shipped.year)
    title = heading(
        rng, ("Delivery Note", "Delivery Note", "Packing Slip", "Dispatch Note", "Packing List")
    )
    meta = [
        f"{rng.choice(('Delivery note no', 'Delivery No.', 'Shipment', 'Slip no'))}: {no}",
        f"{rng.choice(('Dispatch date', 'Ship date', 'Delivery date', 'Date'))}: "
        f"{fmt(shipped, style)}",
        f"{rng.choice(('Your order', 'Customer PO', 'Order ref'))}: "
        f"{fk.number(rng, ('PO', 'ORD'), shipped.year)}",
    ]
    if rng.random() < 0.7:
        meta.append(
            "Carrier: "
            + rng.choice(
                ("DHL Freight", "UPS", "DB Schenker", "DPD", "Kuehne+Nagel", "own transport")
            )
        )
    if rng.random() < 0.6:
        meta.append(f"Tracking: {rng.randint(10**11, 10**12 - 1)}")
    lines = letterhead(rng, shipper, title, meta)
    lines += addressee(
        rng, shipper, consignee, ("Deliver to:", "Ship to:", "Consignee:", "Recipient")
    )
    lines.append("")
    lines += salutation(rng, consignee.contact, (
        "We deliver the following goods against your order.",
        "Please find enclosed the items listed below.",
        "The goods below leave our warehouse today.",
        "With this shipment you receive the following articles.",
    ))  # fmt: skip
    items = fk.line_items(rng, size(rng, 0.45, 0.07))
    header = rng.choice(
        (
            ("Pos", "Article no", "Description", "Ordered", "Delivered", "Backorder"),
            ("Line", "SKU", "Description", "Qty shipped", "Unit", "Batch/Serial"),
            ("Item", "Description", "Quantity", "Packages", "Weight kg"),
        )
    )
    rows = []
    for n, i in enumerate(items, start=1):
        if header[-1] == "Backorder":
            short = rng.choice((0, 0, 0, 0, 1, 2)) if i.quantity > 2 else 0
            rows.append(
                [str(n), i.sku, i.description, str(i.quantity), str(i.quantity - short), str(short)]
            )
        elif header[-1] == "Batch/Serial":
            rows.append(
                [
                    str(n),
                    i.sku,
                    i.description,
                    str(i.quantity),
                    i.unit,
                    f"{rng.choice(('LOT', 'SN', 'B'))}{rng.randint(100000, 999999)}",
                ]
            )
        else:
            rows.append(
                [
                    str(n),
                    i.description,
                    f"{i.quantity} {i.unit}",
                    str(rng.randint(1, 4)),
                    f"{rng.uniform(0.2, 60):.1f}",
                ]
            )
    lines += table(rng, header, rows, grid=GRID_SHARE)
    lines += [
        "",
        f"{rng.choice(('Number of packages', 'Total packages', 'Colli'))}: {rng.randint(1, 40)}",
        f"{rng.choice(('Gross weight', 'Total weight'))}: {rng.uniform(1, 900):.1f} kg",
    ]
    lines += rng.sample(
        [
            "Please check the goods on receipt and note any damage on this delivery note.",
            "Claims for missing or damaged goods must be made within 48 hours.",
            "Backordered items will follow in a separate shipment.",
            "This is not an invoice. The invoice will be sent separately.",
            "Goods received in good condition.",
            f"Pallets: {rng.randint(1, 6)} Euro pallets (exchange).",
        ],
        k=rng.randint(2, 4),
    )
    lines += [
        "",
        rng.choice(("Received by:", "Signature of recipient:", "Goods received by:"))
        + " ____________",
        "Name (block capitals): ____________   Date/Time: ________",
    ]
    return pages(rng, lines, f"{title} {no}", shipper)
