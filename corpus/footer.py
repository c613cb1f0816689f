"""Company footers: the registration, bank and contact lines a business prints on its paper.

A letterhead's footer is the same on everything a company sends (orders, offers, delivery
notes, contracts and invoices alike), so bank details and registration numbers say who
wrote a document, not what it is. Training on invoices alone with bank lines taught the
model the opposite; every writer of corpus.doc_type may end its pages with one of these.
"""

from __future__ import annotations

import random

from corpus import fakes as fk

_BANKS = (
    "Commerzbank",
    "Deutsche Bank",
    "Barclays",
    "Lloyds Bank",
    "BNP Paribas",
    "ING",
    "HSBC",
    "UniCredit",
    "Rabobank",
    "ABN AMRO",
    "Sparkasse",
    "Santander",
    "Erste Bank",
    "UBS",
)
_BICS = (
    "COBADEFFXXX",
    "DEUTDEFF",
    "BARCGB22",
    "LOYDGB2L",
    "BNPAFRPP",
    "INGBNL2A",
    "MIDLGB22",
    "UNCRITMM",
    "RABONL2U",
    "ABNANL2A",
    "BSCHESMM",
    "GIBAATWW",
    "UBSWCHZH",
)
_REGISTERS = (
    "Company No. {n}",
    "Registered in England and Wales No. {n}",
    "Commercial register: HRB {n}",
    "Amtsgericht {city} HRB {n}",
    "Chamber of Commerce (KvK) {n}",
    "RCS {city} B {n}",
    "Reg. no. {n}",
    "Registration number {n}",
    "Company registration {n}",
    "Trade register {n}",
)
_OFFICERS = ("Managing Director", "Managing Directors", "Directors", "CEO", "Board")
_SEPARATORS = (" · ", " | ", " - ", "  ", ", ", " / ")


def _bank(rng: random.Random) -> list[str]:
    """The bank details, in one of the shapes footers print them."""
    bank, iban, bic = rng.choice(_BANKS), fk.iban(rng), rng.choice(_BICS)
    return rng.choice(
        (
            [f"{bank}{rng.choice(_SEPARATORS)}IBAN {iban}{rng.choice(_SEPARATORS)}BIC {bic}"],
            [f"Bank: {bank}", f"IBAN: {iban}", f"BIC/SWIFT: {bic}"],
            [f"Bank details: {bank}, IBAN {iban}, SWIFT {bic}"],
            [
                f"Account: {bank}  Sort code {rng.randint(10, 99)}-{rng.randint(10, 99)}-"
                f"{rng.randint(10, 99)}  Acc. {rng.randint(10**7, 10**8 - 1)}"
            ],
            [f"Bankverbindung: {bank}", f"IBAN {iban} - BIC {bic}"],
        )
    )


def _registration(rng: random.Random, p: fk.Party) -> list[str]:
    register = rng.choice(_REGISTERS).format(n=rng.randint(10000, 9999999), city=p.city)
    parts = [register, f"{rng.choice(('VAT', 'VAT No', 'VAT Reg. No.', 'Tax ID'))} {p.vat_id}"]
    if rng.random() < 0.5:
        parts.append(f"{rng.choice(_OFFICERS)}: {fk.person(rng)}")
    if rng.random() < 0.4:
        parts.insert(0, f"Registered office: {p.street}, {p.postcode} {p.city}")
    return parts


def _contact(rng: random.Random, p: fk.Party) -> list[str]:
    domain = p.email.split("@")[1]
    parts = [f"{p.name}", f"{p.street}", f"{p.postcode} {p.city}"]
    parts += rng.sample(
        [f"Tel {p.phone}", f"www.{domain}", p.email, f"Fax {p.phone[:-2]}00"], k=rng.randint(1, 3)
    )
    return parts


def company_footer(rng: random.Random, p: fk.Party, bank: float = 0.7) -> list[str]:
    """The footer of `p`'s paper: contact, registration and (with probability `bank`) bank.

    Footers print their fields in a few columns or run them into one or two lines; PDF
    text layers and OCR read the columns one after the other.
    """
    blocks = [_contact(rng, p), _registration(rng, p)]
    if rng.random() < bank:
        blocks.append(_bank(rng))
    rng.shuffle(blocks)
    sep = rng.choice(_SEPARATORS)
    style = rng.random()
    if style < 0.4:  # every field run into one line per block
        lines = [sep.join(b) for b in blocks]
    elif style < 0.7:  # one field a line, block after block (columns read one by one)
        lines = [field for b in blocks for field in b]
    else:  # everything in one or two long lines
        fields = [field for b in blocks for field in b]
        half = len(fields) // 2 if rng.random() < 0.5 else len(fields)
        lines = [sep.join(fields[:half]), sep.join(fields[half:])]
    rule = rng.choice(("", "-" * rng.randint(30, 90), "_" * rng.randint(30, 90), "=" * 40))
    return [line for line in (rule, *lines) if line]


def shop_footer(rng: random.Random, p: fk.Party) -> list[str]:
    """What a till receipt prints under the total about the shop: registration, web, phone."""
    fields = [f"{rng.choice(('VAT No', 'VAT Reg', 'Tax ID', 'VAT'))} {p.vat_id}"]
    if rng.random() < 0.5:
        fields.append(rng.choice(_REGISTERS).format(n=rng.randint(10000, 9999999), city=p.city))
    fields += rng.sample(
        [f"www.{p.email.split('@')[1]}", f"Tel {p.phone}", p.name], k=rng.randint(1, 2)
    )
    return fields if rng.random() < 0.6 else [rng.choice(_SEPARATORS).join(fields)]
