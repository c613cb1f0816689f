"""The paper every line-item document of a sale is printed on: letterhead, totals, pages.

corpus.commercial and corpus.delivery write what is on it; these parts say how it is laid
out, and each page ends with the issuer's company footer (corpus.footer) when it has one.
"""

from __future__ import annotations

import datetime as dt
import random

from corpus import fakes as fk
from corpus.footer import company_footer
from corpus.layout import paginate, party_block, ruled, side_by_side


def size(rng: random.Random, short: float, long: float) -> int:
    """How many line items: mostly a handful, sometimes a page, rarely a thick stack."""
    r = rng.random()
    if r < short:
        return rng.randint(1, 7)
    if r < 1 - long:
        return rng.randint(8, 30)
    return rng.randint(30, 110)


def heading(rng: random.Random, options: tuple[str, ...]) -> str:
    """One of the titles, in capitals half the time."""
    title = rng.choice(options)
    return title.upper() if rng.random() < 0.5 else title


# How often a writer ends its pages with the issuer's company footer (corpus.footer).
FOOTER_SHARE = 0.55
# How often tables, and the numbers and dates beside the letterhead, are ruled grids: a
# layout of every kind of document (receipts are boxed as often, corpus.receipt).
GRID_SHARE = 0.25
# How often an invoice, an order or a delivery note opens as a letter (quotations always
# could, in corpus.commercial).
LETTER_SHARE = 0.3
# How often the recipient is addressed as a window envelope shows it: the sender's return
# line above an untitled address block, as many European business letters are laid out.
WINDOW_SHARE = 0.3


def pages(rng: random.Random, lines: list[str], header: str, issuer: fk.Party) -> str:
    """The document cut into pages, each ending with the issuer's footer when it has one."""
    footer = company_footer(rng, issuer) if rng.random() < FOOTER_SHARE else []
    return "\n".join(paginate(rng, lines, header, rng.randint(45, 70), footer))


def letterhead(rng: random.Random, seller: fk.Party, title: str, meta: list[str]) -> list[str]:
    """The issuer's name and address, the title and the document's numbers and dates."""
    head = [seller.name, seller.street, f"{seller.postcode} {seller.city}, {seller.country}"]
    if rng.random() < GRID_SHARE:  # the numbers and dates in a ruled box, two to a row
        pairs = [meta[i : i + 2] for i in range(0, len(meta), 2)]
        meta = ruled([p if len(p) == 2 else [*p, ""] for p in pairs])
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


def totals(rng: random.Random, items: list[fk.LineItem], m: fk.Money, vat: float) -> list[str]:
    """Net, tax and gross lines under a line-item table."""
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


def fmt(d: dt.date, style: str) -> str:
    """A date in the document's own style."""
    return d.strftime(style)


def salutation(rng: random.Random, contact: str, sentences: tuple[str, ...]) -> list[str]:
    """A letter's opening above the table (with probability LETTER_SHARE), else nothing.

    Business documents are often sent as letters whatever their kind; were only offers to
    open with "Dear ...", the greeting would tell the class instead of the wording.
    """
    if rng.random() >= LETTER_SHARE:
        return []
    greeting = rng.choice((f"Dear {contact},", "Dear Sir or Madam,", f"Dear {contact}", ""))
    sentence = rng.choice(sentences)
    if rng.random() < 0.5 or not greeting:
        return [f"{greeting} {sentence}".strip(), ""]
    return [greeting, sentence, ""]


def addressee(
    rng: random.Random, sender: fk.Party, recipient: fk.Party, titles: tuple[str, ...]
) -> list[str]:
    """The recipient's block: under a title ("Bill to:"), or in the envelope's window."""
    if rng.random() >= WINDOW_SHARE:
        return party_block(rng, recipient, rng.choice(titles))
    back = rng.choice((
        f"{sender.name} · {sender.street} · {sender.postcode} {sender.city}",
        f"{sender.name}, {sender.street}, {sender.postcode} {sender.city}",
        f"Return address: {sender.name}, {sender.postcode} {sender.city}",
        f"{sender.name} | {sender.street} | {sender.city}",
    ))  # fmt: skip
    return [back, "", *recipient.address_lines()]
