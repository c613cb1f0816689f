"""Writers of the line-item documents of a sale: invoice, purchase order, quotation, delivery note.

They share parties, numbers and items, and cross-reference each other (an invoice quotes the
order number and the delivery note), so telling them apart takes reading the layout and
wording, not spotting one keyword.
"""

from __future__ import annotations

import datetime as dt
import random

from corpus import fakes as fk
from corpus.footer import company_footer
from corpus.layout import paginate, party_block, side_by_side, table
from corpus.terms import purchase_terms, quotation_scope, sale_terms


def _size(rng: random.Random, short: float, long: float) -> int:
    """How many line items: mostly a handful, sometimes a page, rarely a thick stack."""
    r = rng.random()
    if r < short:
        return rng.randint(1, 7)
    if r < 1 - long:
        return rng.randint(8, 30)
    return rng.randint(30, 110)


def _heading(rng: random.Random, options: tuple[str, ...]) -> str:
    title = rng.choice(options)
    return title.upper() if rng.random() < 0.5 else title


# How often a writer ends its pages with the issuer's company footer (corpus.footer).
FOOTER_SHARE = 0.55


def _pages(rng: random.Random, lines: list[str], header: str, issuer: fk.Party) -> str:
    """The document cut into pages, each ending with the issuer's footer when it has one."""
    footer = company_footer(rng, issuer) if rng.random() < FOOTER_SHARE else []
    return "\n".join(paginate(rng, lines, header, rng.randint(45, 70), footer))


def _letterhead(rng: random.Random, seller: fk.Party, title: str, meta: list[str]) -> list[str]:
    head = [seller.name, seller.street, f"{seller.postcode} {seller.city}, {seller.country}"]
    if rng.random() < 0.3:  # a banner: the name, then address and contact run into lines
        sep = rng.choice((" · ", " | ", ", ", " - "))
        head = [seller.name.upper() if rng.random() < 0.5 else seller.name,
                sep.join((seller.street, f"{seller.postcode} {seller.city}", seller.country)),
                sep.join((seller.phone, seller.email))]  # fmt: skip
        width = rng.choice((0, 70, 90))
        head = [line.center(width).rstrip() for line in head]
        return [*head, rng.choice(("", "=" * 60, "-" * 60)), "", title, "", *meta, ""]
    if rng.random() < 0.5:
        return [*side_by_side(head, meta), "", title, ""]
    return [title, "", *head, "", *meta, ""]


def _totals(rng: random.Random, items: list[fk.LineItem], m: fk.Money, vat: float) -> list[str]:
    net = sum(i.amount for i in items)
    tax = round(net * vat / 100, 2)
    label_net = rng.choice(("Subtotal", "Net amount", "Total net", "Sub-total"))
    label_tax = rng.choice(
        (f"VAT {vat:g}%", f"Tax ({vat:g}%)", f"plus {vat:g}% VAT", f"Sales tax {vat:g}%")
    )
    label_gross = rng.choice(("Total", "TOTAL", "Grand total", "Total gross", "Amount due"))
    return [
        f"{label_net}: {m(net)} {m.code}",
        f"{label_tax}: {m(tax)} {m.code}",
        f"{label_gross}: {m(net + tax, symbol=True)}",
    ]


def _fmt(d: dt.date, style: str) -> str:
    return d.strftime(style)


def invoice(rng: random.Random) -> str:
    """A supplier's bill to a customer: amounts due, tax, due date and bank details."""
    seller, buyer = fk.party(rng), fk.party(rng)
    m, style, issued = fk.money(rng), fk.date_style(rng), fk.date(rng)
    vat = rng.choice(fk.VAT_RATES)
    no = fk.number(rng, ("INV", "IN", "RE", "F", "SI"), issued.year)
    title = _heading(
        rng, ("Invoice", "Tax Invoice", "Commercial Invoice", "Sales Invoice", "Invoice")
    )
    terms_days = rng.choice((7, 14, 30, 30, 45, 60))
    meta = [
        f"{rng.choice(('Invoice No', 'Invoice number', 'Invoice #', 'Inv. no.'))}: {no}",
        f"{rng.choice(('Invoice date', 'Date', 'Date of issue'))}: {_fmt(issued, style)}",
        f"{rng.choice(('Due date', 'Payment due', 'Due'))}: "
        f"{_fmt(issued + dt.timedelta(days=terms_days), style)}",
    ]
    if rng.random() < 0.6:
        meta.append(f"Your order no.: {fk.number(rng, ('PO', 'BO'), issued.year)}")
    if rng.random() < 0.4:
        meta.append(f"Delivery note: {fk.number(rng, ('DN', 'LS'), issued.year)}")
    if rng.random() < 0.5:
        meta.append(f"Customer no.: {rng.randint(10000, 99999)}")
    lines = _letterhead(rng, seller, title, meta)
    lines += party_block(
        rng, buyer, rng.choice(("Bill to:", "Invoice to:", "Customer:", "Billed to"))
    )
    lines.append("")
    if rng.random() < 0.3:
        lines += [
            f"Period of service: {_fmt(issued - dt.timedelta(days=30), style)} - "
            f"{_fmt(issued, style)}",
            "",
        ]
    items = fk.line_items(rng, _size(rng, 0.6, 0.12))
    header = rng.choice(
        (
            ("Pos", "Description", "Qty", "Unit price", "VAT", "Amount"),
            ("Item", "Description", "Quantity", "Unit Price", "Tax %", "Line Total"),
            ("#", "Article", "Qty", "Price", "VAT", "Net"),
        )
    )
    rows = [
        (
            str(n),
            f"{i.sku} {i.description}",
            f"{i.quantity} {i.unit}",
            m(i.unit_price),
            f"{vat:g}%",
            m(i.amount),
        )
        for n, i in enumerate(items, start=1)
    ]
    lines += table(rng, header, rows)
    lines += ["", *_totals(rng, items, m, vat), ""]
    lines.append(
        rng.choice(
            (
                f"Payment terms: net {terms_days} days.",
                f"Please pay within {terms_days} days of the invoice date quoting invoice number "
                f"{no}.",
                f"Payable within {terms_days} days without deduction.",
                f"Terms: {terms_days} days net. 2% discount if paid within 10 days.",
            )
        )
    )
    if rng.random() < 0.6:  # otherwise the bank details are in the footer, or paid by card
        lines += [
            "Bank: "
            f"{rng.choice(('Commerzbank', 'Barclays', 'BNP Paribas', 'ING', 'HSBC', 'UniCredit'))}",
            f"IBAN: {fk.iban(rng)}  BIC: "
            f"{rng.choice(('COBADEFFXXX', 'BARCGB22', 'INGBNL2A', 'BNPAFRPP'))}",
        ]
    if rng.random() < 0.5:
        lines.append(
            rng.choice(
                (
                    "Late payments incur interest at 8% above the base rate.",
                    "Goods remain our property until paid in full.",
                    "Thank you for your business.",
                    "Questions about this invoice? Contact " + seller.email,
                )
            )
        )
    if rng.random() < 0.2:
        lines += ["", *sale_terms(rng, rng.randint(3, 12))]
    if rng.random() < 0.5:
        lines += ["", f"{seller.name} - Registered in {seller.country} - VAT {seller.vat_id}"]
    return _pages(rng, lines, f"{title} {no}", seller)


def purchase_order(rng: random.Random) -> str:
    """A buyer's order to a supplier: what to deliver, where, by when, under whose approval."""
    buyer, supplier = fk.party(rng), fk.party(rng)
    m, style, issued = fk.money(rng), fk.date_style(rng), fk.date(rng)
    no = fk.number(rng, ("PO", "BO", "ORD", "P"), issued.year)
    title = _heading(rng, ("Purchase Order", "Purchase Order", "Order", "PO", "Order Form"))
    needed = issued + dt.timedelta(days=rng.randint(5, 60))
    meta = [
        f"{rng.choice(('PO Number', 'PO No.', 'Order number', 'Order No'))}: {no}",
        f"{rng.choice(('Order date', 'Date', 'PO date'))}: {_fmt(issued, style)}",
        f"{rng.choice(('Requested delivery date', 'Deliver by', 'Need-by date'))}: "
        f"{_fmt(needed, style)}",
        f"{rng.choice(('Buyer', 'Requisitioner', 'Purchaser'))}: {fk.person(rng)}",
    ]
    if rng.random() < 0.5:
        meta.append(f"Cost centre: {rng.randint(1000, 9999)}")
    lines = _letterhead(rng, buyer, title, meta)
    lines += party_block(rng, supplier, rng.choice(("Supplier:", "Vendor:", "To:", "Supplier")))
    lines.append("")
    if rng.random() < 0.6:
        lines += [
            rng.choice(("Ship to:", "Delivery address:", "Deliver to:")),
            *buyer.address_lines()[1:],
            "",
        ]
    items = fk.line_items(rng, _size(rng, 0.6, 0.08))
    header = rng.choice(
        (
            ("Line", "Item code", "Description", "Qty", "UoM", "Unit cost", "Total"),
            ("No", "Part number", "Description", "Order qty", "Unit", "Price", "Ext. price"),
            ("Pos", "Material", "Text", "Quantity", "Net price", "Value", "Deliv. date"),
        )
    )
    rows = []
    for n, i in enumerate(items, start=1):
        row = [
            str(n * 10),
            i.sku,
            i.description,
            str(i.quantity),
            i.unit,
            m(i.unit_price),
            m(i.amount),
        ]
        if header[-1] == "Deliv. date":
            row = [
                str(n * 10),
                i.sku,
                i.description,
                f"{i.quantity} {i.unit}",
                m(i.unit_price),
                m(i.amount),
                _fmt(needed, style),
            ]
        rows.append(row)
    lines += table(rng, header, rows)
    total = sum(i.amount for i in items)
    lines += [
        "",
        f"{rng.choice(('Order total', 'Total order value', 'PO total'))}: {m(total, symbol=True)} "
        f"{rng.choice(('excl. VAT', 'net', ''))}".rstrip(),
        "",
    ]
    lines += rng.sample(
        [
            f"Please confirm this order within {rng.choice((2, 3, 5))} working days.",
            f"The order number {no} must appear on all invoices, delivery notes and "
            "correspondence.",
            f"Incoterms 2020: {rng.choice(('DAP', 'DDP', 'FCA', 'EXW', 'CPT'))} {buyer.city}.",
            "Partial deliveries only after prior agreement.",
            f"Send invoices to {buyer.email}.",
            "Goods must be delivered with a delivery note and certificate of conformity.",
            f"Payment terms: {rng.choice((30, 45, 60))} days net from receipt of goods and "
            "invoice.",
        ],
        k=rng.randint(2, 5),
    )
    lines += [
        "",
        f"Approved by: {fk.person(rng)}",
        rng.choice(("Signature: ____________", "Authorised signature", "")),
    ]
    if rng.random() < 0.22:
        lines += ["", *purchase_terms(rng, rng.randint(6, 28))]
    return _pages(rng, lines, f"{title} {no}", buyer)


def quotation(rng: random.Random) -> str:
    """A supplier's priced offer, valid for a time, that the customer may accept."""
    seller, customer = fk.party(rng), fk.party(rng)
    m, style, issued = fk.money(rng), fk.date_style(rng), fk.date(rng)
    vat = rng.choice(fk.VAT_RATES)
    no = fk.number(rng, ("Q", "QT", "QUO", "OF", "AN"), issued.year)
    title = _heading(
        rng, ("Quotation", "Quote", "Price Quotation", "Offer", "Proposal", "Estimate")
    )
    valid = rng.choice((14, 30, 30, 60, 90))
    meta = [
        f"{rng.choice(('Quotation No', 'Quote #', 'Offer no.', 'Reference'))}: {no}",
        f"Date: {_fmt(issued, style)}",
        f"{rng.choice(('Valid until', 'Valid to', 'Expiry date'))}: "
        f"{_fmt(issued + dt.timedelta(days=valid), style)}",
    ]
    if rng.random() < 0.5:
        meta.append(
            f"Your enquiry of {_fmt(issued - dt.timedelta(days=rng.randint(1, 20)), style)}"
        )
    lines = _letterhead(rng, seller, title, meta)
    lines += party_block(rng, customer, rng.choice(("Prepared for:", "To:", "Customer:", "Attn:")))
    lines += [
        "",
        rng.choice(
            (
                f"Dear {customer.contact},\nThank you for your enquiry. We are pleased to quote "
                "as follows:",
                "As requested, please find our best offer below.",
                f"Dear {customer.contact}, further to our meeting we propose the following.",
                "We thank you for your interest and submit the following quotation.",
            )
        ),
        "",
    ]
    if rng.random() < 0.25:
        lines += [*quotation_scope(rng, rng.randint(2, 14)), ""]
    items = fk.line_items(rng, _size(rng, 0.55, 0.12))
    header = rng.choice(
        (
            ("Item", "Description", "Qty", "Unit price", "Discount", "Total"),
            ("Pos", "Description", "Quantity", "Price", "Amount"),
            ("Option", "Description", "Qty", "Rate", "Estimate"),
        )
    )
    rows = []
    for n, i in enumerate(items, start=1):
        row = [str(n), i.description, str(i.quantity), m(i.unit_price)]
        if header[4] == "Discount":
            row.append(f"{rng.choice((0, 0, 5, 10, 15))}%")
        row.append(m(i.amount))
        rows.append(row)
    lines += table(rng, header, rows)
    lines += ["", *_totals(rng, items, m, vat), ""]
    lines += rng.sample(
        [
            f"This quotation is valid for {valid} days from the date above.",
            "Prices are quoted excluding VAT unless stated otherwise.",
            f"Estimated lead time: {rng.randint(1, 8)} weeks after receipt of your purchase order.",
            "To accept, please sign and return this quotation or send us your purchase order "
            "quoting "
            f"reference {no}.",
            "Optional items are not included in the total.",
            "Prices are subject to availability and may change after "
            f"{_fmt(issued + dt.timedelta(days=valid), style)}.",
            "We look forward to receiving your order.",
        ],
        k=rng.randint(2, 5),
    )
    if rng.random() < 0.6:
        lines += [
            "",
            "Accepted by (customer): ____________________  Date: ________",
            f"For {seller.name}: {seller.contact}",
        ]
    if rng.random() < 0.12:
        lines += ["", *sale_terms(rng, rng.randint(4, 14))]
    return _pages(rng, lines, f"{title} {no}", seller)


def delivery_note(rng: random.Random) -> str:
    """A shipper's list of goods handed over: quantities, packages, carrier, receipt signature."""
    shipper, consignee = fk.party(rng), fk.party(rng)
    style, shipped = fk.date_style(rng), fk.date(rng)
    no = fk.number(rng, ("DN", "LS", "DEL", "SHP"), shipped.year)
    title = _heading(
        rng, ("Delivery Note", "Delivery Note", "Packing Slip", "Dispatch Note", "Packing List")
    )
    meta = [
        f"{rng.choice(('Delivery note no', 'Delivery No.', 'Shipment', 'Slip no'))}: {no}",
        f"{rng.choice(('Dispatch date', 'Ship date', 'Delivery date', 'Date'))}: "
        f"{_fmt(shipped, style)}",
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
    lines = _letterhead(rng, shipper, title, meta)
    lines += party_block(
        rng, consignee, rng.choice(("Deliver to:", "Ship to:", "Consignee:", "Recipient"))
    )
    lines.append("")
    items = fk.line_items(rng, _size(rng, 0.45, 0.07))
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
    lines += table(rng, header, rows)
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
    return _pages(rng, lines, f"{title} {no}", shipper)
