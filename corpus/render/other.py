"""Unseen templates for a till receipt (an 80 mm roll) and a contract (parties side by
side, numbered clauses with headings, a signature table), laid out as blocks.

The receipt prints its items as a ruled grid and its totals in a box, unlike the training
receipts' padded lines (corpus/receipt.py); the contract's clauses are written here, not
drawn from corpus/contract.py, and its parties sit in two columns under a centred title.
"""

from __future__ import annotations

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
from corpus.render.sale import Written

_TILL = (
    ("Sandwich", 4.5),
    ("Orange juice", 2.9),
    ("Notebook A5", 3.2),
    ("Batteries AA 4x", 5.99),
    ("Coffee beans", 8.49),
    ("Parking 2h", 4.0),
    ("Newspaper", 2.2),
    ("Salad bowl", 6.8),
    ("Mineral water", 1.5),
    ("Chocolate bar", 1.3),
    ("USB cable", 9.99),
    ("Day ticket", 7.6),
)


def receipt(rng: random.Random) -> Written:
    """Proof of a payment at the counter: a few items, the total, how it was paid."""
    shop = fk.party(rng)
    m, day = fk.money(rng), fk.date(rng)
    picked = rng.sample(_TILL, rng.randint(1, 7))
    rows, total = [], 0.0
    for name, price in picked:
        qty = rng.choice((1, 1, 1, 2, 3))
        price = round(price * rng.uniform(0.9, 1.2), 2)
        total += qty * price
        rows.append((name, str(qty), m(qty * price)))
    vat = rng.choice((7.0, 10.0, 19.0, 20.0))
    tender = rng.choice(("Card", "Cash", "Contactless", "Debit card"))
    blocks: list[Block] = [
        Letterhead(shop.name.split(" ")[0].upper(), (shop.street, f"{shop.postcode} {shop.city}")),
        Title(rng.choice(("Your receipt", "Sales slip", "RECEIPT"))),
        Fields(
            (
                ("Date", f"{day.isoformat()} {rng.randint(7, 21):02d}:{rng.randint(0, 59):02d}"),
                ("Till / slip", f"{rng.randint(1, 8)} / {rng.randint(1000, 99999)}"),
            ),
            per_row=1,
        ),
        Grid(("Item", "Qty", "Amount"), tuple(rows), numeric=(1, 2)),
        Totals(
            (
                (f"of which VAT {vat:g}%", m(total - total / (1 + vat / 100))),
                ("Paid", m(total, symbol=True)),
            )
        ),
        Paragraph(f"Paid by {tender.lower()} - {shop.vat_id}", small=True),
        Paragraph(
            rng.choice(("Thank you, see you soon.", "Keep this slip for exchanges.")), small=True
        ),
    ]
    return blocks, ()


_CLAUSES = (
    ("Scope", "{a} shall perform the work described in Annex 1 for {b}, with due care and by "
     "suitably qualified staff."),
    ("Duration", "The contract runs from {start} for {months} months and renews for a year at a "
     "time unless either party gives {notice} days' written notice."),
    ("Remuneration", "{b} pays the fees set out in Annex 2. Fees are invoiced monthly in arrears "
     "and payable within thirty days of the invoice date."),
    ("Confidentiality", "Each party keeps secret all information of the other marked or known to "
     "be confidential, during the contract and for five years after it ends."),
    ("Liability", "Neither party is liable for indirect loss. The total liability of either party "
     "in any contract year is capped at the fees paid in that year."),
    ("Termination", "Either party may end the contract at once by written notice if the other "
     "materially breaches it and fails to remedy the breach within thirty days."),
    ("Intellectual property", "Rights in pre-existing material stay with their owner; {b} "
     "receives a non-exclusive licence to use the deliverables for its own business."),
    ("Data protection", "Where {a} processes personal data for {b}, it does so only on documented "
     "instructions and under the data processing agreement in Annex 3."),
    ("Force majeure", "Neither party is in breach while prevented from performing by events "
     "beyond its reasonable control, provided it notifies the other without delay."),
    ("Assignment", "Neither party may assign or transfer this contract without the prior written "
     "consent of the other, which may not be unreasonably withheld."),
    ("Entire agreement", "This contract and its annexes are the whole agreement of the parties and "
     "replace all earlier arrangements on its subject."),
    ("Governing law", "This contract is governed by the laws of {law}; the courts of {city} have "
     "exclusive jurisdiction."),
)  # fmt: skip


def contract(rng: random.Random) -> Written:
    """An agreement between two parties: who, numbered clauses, and both signatures."""
    a, b = fk.party(rng), fk.party(rng)
    start = fk.date(rng)
    kind = rng.choice(("Service Contract", "Agreement for Services", "Supply Contract",
                       "Consultancy Agreement", "Framework Contract"))  # fmt: skip
    values = {
        "a": "the Contractor",
        "b": "the Client",
        "start": start.strftime("%d %B %Y"),
        "months": str(rng.choice((12, 24, 36))),
        "notice": str(rng.choice((30, 60, 90))),
        "law": rng.choice(("England and Wales", "Germany", "the Netherlands", "Ireland")),
        "city": b.city,
    }
    clauses = [_CLAUSES[0], *rng.sample(_CLAUSES[1:-1], rng.randint(4, 9)), _CLAUSES[-1]]
    blocks: list[Block] = [
        Title(kind.upper() if rng.random() < 0.5 else kind),
        Paragraph(
            f"Contract no. {fk.number(rng, ('C', 'AGR'), start.year)} - made on "
            f"{start.strftime('%d %B %Y')} between"
        ),
        Columns(
            (*a.address_lines(), '(the "Contractor")'),
            (*b.address_lines(), '(the "Client")'),
        ),
    ]
    for n, (heading, text) in enumerate(clauses, start=1):
        sentence = text.format(**values)
        blocks += [Heading(f"{n}. {heading}"), Paragraph(sentence[0].upper() + sentence[1:])]
    blocks.append(Signatures((f"For the Contractor: {a.contact}", f"For the Client: {b.contact}")))
    return blocks, (f"{kind} between {a.name} and {b.name}", "Confidential")
