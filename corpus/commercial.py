"""Writers of the priced documents of a sale: invoice, purchase order, quotation.

They share parties, numbers and items, and cross-reference each other (an invoice quotes the
order number and the delivery note, corpus.delivery), so telling them apart takes reading
the layout and wording, not spotting one keyword.
"""

from __future__ import annotations

import datetime as dt
import random

from corpus import fakes as fk
from corpus.layout import table
from corpus.paper import (
    GRID_SHARE,
    addressee,
    fmt,
    heading,
    letterhead,
    pages,
    salutation,
    size,
    totals,
)
from corpus.terms import purchase_terms, quotation_scope, sale_terms


def invoice(rng: random.Random) -> str:
    """A supplier's bill to a customer: amounts due, tax, due date and bank details."""
    seller, buyer = fk.party(rng), fk.party(rng)
    m, style, issued = fk.money(rng), fk.date_style(rng), fk.date(rng)
    vat = rng.choice(fk.VAT_RATES)
    no = fk.number(rng, ("INV", "IN", "RE", "F", "SI"), issued.year)
    title = heading(
        rng, ("Invoice", "Tax Invoice", "Commercial Invoice", "Sales Invoice", "Invoice")
    )
    terms_days = rng.choice((7, 14, 30, 30, 45, 60))
    meta = [
        f"{rng.choice(('Invoice No', 'Invoice number', 'Invoice #', 'Inv. no.'))}: {no}",
        f"{rng.choice(('Invoice date', 'Date', 'Date of issue'))}: {fmt(issued, style)}",
        f"{rng.choice(('Due date', 'Payment due', 'Due'))}: "
        f"{fmt(issued + dt.timedelta(days=terms_days), style)}",
    ]
    if rng.random() < 0.6:
        meta.append(f"Your order no.: {fk.number(rng, ('PO', 'BO'), issued.year)}")
    if rng.random() < 0.4:
        meta.append(f"Delivery note: {fk.number(rng, ('DN', 'LS'), issued.year)}")
    if rng.random() < 0.5:
        meta.append(f"Customer no.: {rng.randint(10000, 99999)}")
    lines = letterhead(rng, seller, title, meta)
    lines += addressee(rng, seller, buyer, ("Bill to:", "Invoice to:", "Customer:", "Billed to"))
    lines.append("")
    lines += salutation(rng, buyer.contact, (
        "Please find below our invoice for the goods delivered.",
        "We invoice you for the following services.",
        "Thank you for your order, which we invoice as follows.",
        "For our deliveries under your order we bill you the amounts below.",
    ))  # fmt: skip
    if rng.random() < 0.3:
        lines += [
            f"Period of service: {fmt(issued - dt.timedelta(days=30), style)} - "
            f"{fmt(issued, style)}",
            "",
        ]
    items = fk.line_items(rng, size(rng, 0.6, 0.12))
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
    lines += table(rng, header, rows, grid=GRID_SHARE)
    lines += ["", *totals(rng, items, m, vat), ""]
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
    return pages(rng, lines, f"{title} {no}", seller)


def purchase_order(rng: random.Random) -> str:
    """A buyer's order to a supplier: what to deliver, where, by when, under whose approval."""
    buyer, supplier = fk.party(rng), fk.party(rng)
    m, style, issued = fk.money(rng), fk.date_style(rng), fk.date(rng)
    no = fk.number(rng, ("PO", "BO", "ORD", "P"), issued.year)
    title = heading(rng, ("Purchase Order", "Purchase Order", "Order", "PO", "Order Form"))
    needed = issued + dt.timedelta(days=rng.randint(5, 60))
    meta = [
        f"{rng.choice(('PO Number', 'PO No.', 'Order number', 'Order No'))}: {no}",
        f"{rng.choice(('Order date', 'Date', 'PO date'))}: {fmt(issued, style)}",
        f"{rng.choice(('Requested delivery date', 'Deliver by', 'Need-by date'))}: "
        f"{fmt(needed, style)}",
        f"{rng.choice(('Buyer', 'Requisitioner', 'Purchaser'))}: {fk.person(rng)}",
    ]
    if rng.random() < 0.5:
        meta.append(f"Cost centre: {rng.randint(1000, 9999)}")
    lines = letterhead(rng, buyer, title, meta)
    lines += addressee(rng, buyer, supplier, ("Supplier:", "Vendor:", "To:", "Supplier"))
    lines.append("")
    lines += salutation(rng, supplier.contact, (
        "Please supply the following items on the terms below.",
        "With reference to your offer we order as follows.",
        "We hereby place the following order.",
        "Kindly deliver the goods listed below to the address stated.",
    ))  # fmt: skip
    if rng.random() < 0.6:
        lines += [
            rng.choice(("Ship to:", "Delivery address:", "Deliver to:")),
            *buyer.address_lines()[1:],
            "",
        ]
    items = fk.line_items(rng, size(rng, 0.6, 0.08))
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
                fmt(needed, style),
            ]
        rows.append(row)
    lines += table(rng, header, rows, grid=GRID_SHARE)
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
    return pages(rng, lines, f"{title} {no}", buyer)


def quotation(rng: random.Random) -> str:
    """A supplier's priced offer, valid for a time, that the customer may accept."""
    seller, customer = fk.party(rng), fk.party(rng)
    m, style, issued = fk.money(rng), fk.date_style(rng), fk.date(rng)
    vat = rng.choice(fk.VAT_RATES)
    no = fk.number(rng, ("Q", "QT", "QUO", "OF", "AN"), issued.year)
    title = heading(rng, ("Quotation", "Quote", "Price Quotation", "Offer", "Proposal", "Estimate"))
    valid = rng.choice((14, 30, 30, 60, 90))
    meta = [
        f"{rng.choice(('Quotation No', 'Quote #', 'Offer no.', 'Reference'))}: {no}",
        f"Date: {fmt(issued, style)}",
        f"{rng.choice(('Valid until', 'Valid to', 'Expiry date'))}: "
        f"{fmt(issued + dt.timedelta(days=valid), style)}",
    ]
    if rng.random() < 0.5:
        meta.append(f"Your enquiry of {fmt(issued - dt.timedelta(days=rng.randint(1, 20)), style)}")
    lines = letterhead(rng, seller, title, meta)
    lines += addressee(rng, seller, customer, ("Prepared for:", "To:", "Customer:", "Attn:"))
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
    items = fk.line_items(rng, size(rng, 0.55, 0.12))
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
    lines += table(rng, header, rows, grid=GRID_SHARE)
    lines += ["", *totals(rng, items, m, vat), ""]
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
            f"{fmt(issued + dt.timedelta(days=valid), style)}.",
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
    return pages(rng, lines, f"{title} {no}", seller)
