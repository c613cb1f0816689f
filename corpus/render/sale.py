"""Unseen templates for the documents of a sale: invoice, purchase order, quotation and
delivery note, laid out as blocks (corpus/render/blocks.py).

They differ from the training writers (corpus/commercial.py) in layout, not in trade: the
sender's letterhead band comes first, the recipient's address window sits beside a ruled
reference grid, the title follows the addresses, items are a ruled grid, totals a box at
the right, and the company's registration, bank and contact lines are a footer on every
page. The wording is what such forms say; nothing here was chosen by asking the model.
"""

from __future__ import annotations

import datetime as dt
import random

from corpus import fakes as fk
from corpus.render.blocks import (
    Block,
    Columns,
    Fields,
    Grid,
    Heading,
    Letterhead,
    Paragraph,
    Signatures,
    Title,
    Totals,
)

Written = tuple[list[Block], tuple[str, ...]]  # blocks and the footer


def letterhead(rng: random.Random, p: fk.Party) -> Letterhead:
    """The sender's band: name, then address and contacts run together on one line."""
    tagline = rng.choice(
        ("", f"{p.city} · since {rng.randint(1950, 2015)}", "Quality you can trust")
    )
    lines = (f"{p.street} · {p.postcode} {p.city} · {p.country}", f"{p.phone} · {p.email}")
    return Letterhead(p.name, (tagline, *lines) if tagline else lines)


_BANKS = ("Deutsche Bank", "Lloyds", "Rabobank", "Société Générale", "Santander")


def footer(rng: random.Random, p: fk.Party) -> tuple[str, ...]:
    """Registration, bank and contact lines, printed at the foot of every page."""
    return (
        f"{p.name} · registered office {p.city} · company no. {rng.randint(100000, 9999999)}"
        f" · VAT {p.vat_id}",
        f"Bank {rng.choice(_BANKS)} · IBAN {fk.iban(rng)} · {p.email}",
    )


def address_window(p: fk.Party, small_sender: fk.Party) -> tuple[str, ...]:
    """A window-envelope address: the sender in one small line, then the recipient."""
    return (f"{small_sender.name}, {small_sender.city}", "", *p.address_lines())


def _items_grid(
    rng: random.Random, items: list[fk.LineItem], m: fk.Money, header: tuple[str, ...]
) -> Grid:
    rows = tuple(
        (str(n), i.description, i.sku, f"{i.quantity} {i.unit}", m(i.unit_price), m(i.amount))
        for n, i in enumerate(items, start=1)
    )
    return Grid(header, rows, numeric=(3, 4, 5))


def _count(rng: random.Random) -> int:
    return rng.randint(2, 9) if rng.random() < 0.75 else rng.randint(10, 24)


def invoice(rng: random.Random) -> Written:
    """A bill after delivery: amounts due, tax, due date, where to pay."""
    seller, buyer = fk.party(rng), fk.party(rng)
    m, style, issued = fk.money(rng), fk.date_style(rng), fk.date(rng)
    vat = rng.choice(fk.VAT_RATES)
    no = fk.number(rng, ("INV", "RE", "SI"), issued.year)
    days = rng.choice((14, 30, 30, 60))
    due = issued + dt.timedelta(days=days)
    refs = Fields(
        (
            ("Invoice number", no),
            ("Invoice date", issued.strftime(style)),
            ("Customer account", str(rng.randint(10000, 99999))),
            ("Your reference", fk.number(rng, ("PO", "ORD"), issued.year)),
            ("Payment due", due.strftime(style)),
            ("Currency", m.code),
        )
    )
    items = fk.line_items(rng, _count(rng))
    net = sum(i.amount for i in items)
    tax = round(net * vat / 100, 2)
    blocks: list[Block] = [
        letterhead(rng, seller),
        Columns(address_window(buyer, seller), (f"{seller.city}, {issued.strftime(style)}",)),
        Title(f"{rng.choice(('Invoice', 'INVOICE', 'Tax invoice'))} {no}"),
        refs,
        Paragraph(
            f"Dear {buyer.contact}, for the goods and services listed below we charge you as "
            "follows."
        ),
        _items_grid(rng, items, m, ("No.", "Description", "Art. no.", "Qty", "Price", "Amount")),
        Totals(
            (
                ("Net total", m(net)),
                (f"VAT {vat:g}%", m(tax)),
                ("Invoice total", m(net + tax, symbol=True)),
            )
        ),
        Heading("Payment"),
        Paragraph(
            f"Please transfer {m(net + tax, symbol=True)} by {due.strftime(style)} to the account "
            f"below, quoting {no}. Payment is due {days} days after the date of this invoice."
        ),
    ]
    return blocks, footer(rng, seller)


def purchase_order(rng: random.Random) -> Written:
    """A buyer's order to a supplier: what, where to deliver, by when, who approved it."""
    buyer, supplier = fk.party(rng), fk.party(rng)
    m, style, issued = fk.money(rng), fk.date_style(rng), fk.date(rng)
    no = fk.number(rng, ("PO", "ORD", "BO"), issued.year)
    needed = issued + dt.timedelta(days=rng.randint(5, 45))
    items = fk.line_items(rng, _count(rng))
    blocks: list[Block] = [
        letterhead(rng, buyer),
        Title(f"{rng.choice(('Purchase order', 'PURCHASE ORDER', 'Order'))} {no}"),
        Columns(
            ("Supplier", *supplier.address_lines()),
            ("Deliver to", buyer.name, buyer.street, f"{buyer.postcode} {buyer.city}"),
        ),
        Fields(
            (
                ("Order number", no),
                ("Order date", issued.strftime(style)),
                ("Required by", needed.strftime(style)),
                ("Buyer", fk.person(rng)),
                ("Cost centre", str(rng.randint(1000, 9999))),
                ("Incoterms", rng.choice(("DAP", "DDP", "FCA", "EXW"))),
            ),
            per_row=3,
        ),
        Paragraph("Please supply the following items under the conditions stated below."),
        _items_grid(
            rng, items, m, ("Line", "Description", "Part no.", "Qty", "Unit cost", "Value")
        ),
        Totals((("Order value (net)", m(sum(i.amount for i in items), symbol=True)),)),
        Heading("Conditions"),
        Paragraph(
            f"Quote order number {no} on every delivery note and invoice. Confirm this order "
            f"within {rng.choice((2, 3, 5))} working days, stating the delivery date. Deliveries "
            "without an order number may be refused at the goods-in desk."
        ),
        Signatures((f"Ordered by {fk.person(rng)}", f"Approved by {fk.person(rng)}")),
    ]
    return blocks, footer(rng, buyer)


def quotation(rng: random.Random) -> Written:
    """A priced offer, valid for a time, that the customer may accept."""
    seller, customer = fk.party(rng), fk.party(rng)
    m, style, issued = fk.money(rng), fk.date_style(rng), fk.date(rng)
    vat = rng.choice(fk.VAT_RATES)
    no = fk.number(rng, ("Q", "QT", "OF"), issued.year)
    valid = issued + dt.timedelta(days=rng.choice((14, 30, 60)))
    items = fk.line_items(rng, _count(rng))
    net = sum(i.amount for i in items)
    blocks: list[Block] = [
        letterhead(rng, seller),
        Columns(
            address_window(customer, seller),
            (
                f"Offer no. {no}",
                f"Date {issued.strftime(style)}",
                f"Valid until {valid.strftime(style)}",
                f"Contact {seller.contact}",
            ),
        ),
        Title(rng.choice(("Quotation", "QUOTATION", "Our offer", "Price quotation"))),
        Paragraph(
            f"Dear {customer.contact}, thank you for your enquiry. We are pleased to offer the "
            "following, subject to the terms below."
        ),
        _items_grid(rng, items, m, ("Pos.", "Description", "Ref.", "Qty", "Unit price", "Total")),
        Totals(
            (
                ("Total excl. VAT", m(net)),
                (f"VAT {vat:g}%", m(round(net * vat / 100, 2))),
                ("Offer total", m(net * (1 + vat / 100), symbol=True)),
            )
        ),
        Heading("Terms of this offer"),
        Paragraph(
            f"This offer is valid until {valid.strftime(style)}. Lead time is about "
            f"{rng.randint(2, 8)} weeks from your order. To accept, sign below or send us your "
            f"purchase order quoting {no}."
        ),
        Signatures(("Accepted (customer), date", f"For {seller.name}")),
    ]
    return blocks, footer(rng, seller)


def delivery_note(rng: random.Random) -> Written:
    """Goods handed over: quantities, packages, carrier, and the receiver's signature."""
    shipper, consignee = fk.party(rng), fk.party(rng)
    style, shipped = fk.date_style(rng), fk.date(rng)
    no = fk.number(rng, ("DN", "DEL", "SHP"), shipped.year)
    items = fk.line_items(rng, _count(rng))
    rows = tuple(
        (str(n), i.sku, i.description, str(i.quantity), i.unit, str(rng.randint(1, 4)))
        for n, i in enumerate(items, start=1)
    )
    blocks: list[Block] = [
        letterhead(rng, shipper),
        Title(f"{rng.choice(('Delivery note', 'DELIVERY NOTE', 'Dispatch note'))} {no}"),
        Columns(
            ("Consignee", *consignee.address_lines()),
            (
                "Shipped from",
                shipper.street,
                f"{shipper.postcode} {shipper.city}",
                f"Dispatch date {shipped.strftime(style)}",
            ),
        ),
        Fields(
            (
                ("Delivery note", no),
                ("Customer order", fk.number(rng, ("PO", "ORD"), shipped.year)),
                ("Carrier", rng.choice(("DHL Freight", "DB Schenker", "DPD", "own transport"))),
                ("Packages", str(rng.randint(1, 30))),
                ("Gross weight", f"{rng.uniform(2, 800):.1f} kg"),
                ("Tracking", str(rng.randint(10**11, 10**12 - 1))),
            )
        ),
        Grid(("Pos.", "Article", "Description", "Qty", "Unit", "Parcels"), rows, numeric=(3, 5)),
        Paragraph(
            "Check the goods on arrival. Note visible damage or missing parcels on this note "
            "before signing; later claims cannot be accepted. This is not an invoice."
        ),
        Signatures(("Goods received (name, date)", f"Driver, {shipper.name}")),
    ]
    return blocks, footer(rng, shipper)
