"""The shapes a document takes on paper or screen: a formal form, an e-mail, a terse slip,
one paragraph, a list of labelled fields. Each fills a kind's wordings (corpus.varied.kinds)
with one world's facts (corpus.varied.world)."""

from __future__ import annotations

import random
from collections.abc import Callable

from corpus import fakes as fk
from corpus.varied.kind import Kind
from corpus.varied.kinds import KINDS
from corpus.varied.world import World

_CARDS = ("VISA", "Mastercard", "Amex", "Debit", "Maestro", "EFTPOS", "Apple Pay")
_CARRIERS = ("DHL", "UPS", "FedEx", "DPD", "Royal Mail", "PostNL", "GLS", "own van", "TNT")
_CLAUSES = (
    "{n}. Services. {seller} shall perform the services described in Schedule 1.",
    "{n}. Payment. {buyer} shall pay the fees within {days} days of each invoice.",
    "{n}. Term. This agreement starts on {date} and runs for {months} months.",
    "{n}. Confidentiality. Each party shall keep the other's information confidential.",
    "{n}. Liability. Neither party is liable for indirect or consequential loss.",
    "{n}. Termination. Either party may terminate for material breach on written notice.",
    "{n}. Intellectual property remains with the party that created it.",
    "{n}. Notices must be given in writing to the addresses above.",
    "{n}. Force majeure. Neither party is liable for delay caused by events beyond its control.",
    "{n}. Assignment. Neither party may assign this agreement without the other's consent.",
    "{n}. The Tenant shall pay the rent monthly in advance and keep the premises in good order.",
    "{n}. The Employee shall work {hours} hours per week and is entitled to 25 days' holiday.",
    "{n}. Governing law. This agreement is governed by the laws of {country}.",
    "{n}. Entire agreement. This document replaces all earlier agreements on its subject.",
)


def context(rng: random.Random, w: World, label: str) -> dict[str, str]:
    """Every placeholder's value for this document."""
    total = w.net + w.tax
    first = w.items[0]
    return {
        "seller": w.seller.name, "buyer": w.buyer.name, "person": w.person,
        "contact": w.buyer.contact, "city": w.buyer.city, "country": w.seller.country,
        "no": w.refs[label], "po": w.refs["purchase_order"], "inv": w.refs["invoice"],
        "quote": w.refs["quotation"], "dn": w.refs["delivery_note"], "ctr": w.refs["contract"],
        "date": w.date(), "due": w.date(rng.choice((7, 14, 30, 45, 60))),
        "days": str(rng.choice((7, 10, 14, 30, 60, 90))), "weeks": str(rng.randint(1, 12)),
        "months": str(rng.choice((3, 6, 12, 24, 36))), "hours": str(rng.choice((20, 30, 37, 40))),
        "total": w.money(total), "tax": f"{w.locale.tax} {w.tax_rate:g}%", "zero": w.money(0),
        "change": w.money(rng.choice((0.0, 0.5, 1.2, 3.0, 7.35))),
        "item": first.description, "qty": str(first.quantity), "price": w.money(first.price),
        "month": w.issued.strftime("%B %Y"), "iban": fk.iban(rng),
        "acct": str(rng.randint(1000, 999999)), "first": w.person.split()[0],
        "card": rng.choice(_CARDS), "last4": f"{rng.randint(0, 9999):04d}",
        "time": f"{rng.randint(7, 21):02d}:{rng.randint(0, 59):02d}",
        "carrier": rng.choice(_CARRIERS), "track": f"{rng.randint(10**9, 10**10 - 1)}",
        "pkgs": str(rng.randint(1, 12)), "kg": str(rng.randint(2, 900)),
    }  # fmt: skip


def _fill(template: str, ctx: dict[str, str]) -> str:
    return template.format_map(ctx)


def _items(rng: random.Random, w: World, kind: Kind, terse: bool) -> list[str]:
    """The items in one of the ways documents list them, priced as the kind usually is."""
    priced = rng.random() < kind.priced
    style = rng.choice(("columns", "x", "bullets", "pipes")) if not terse else "till"
    out = []
    if style == "columns":
        header = rng.choice((("Qty", "Description", "Unit price", "Amount"),
                             ("Item", "Qty", "Price", "Total"),
                             ("Description", "Qty", "Rate", "Line")))  # fmt: skip
        out.append("  ".join(header if priced else header[:2]))
    for i in w.items:
        desc = i.description.upper() if terse else i.description
        if not priced:
            out.append(rng.choice((f"{i.quantity} {i.unit} {desc}", f"{desc}  x{i.quantity}",
                                   f"- {i.quantity} x {desc}",
                                   f"{desc} - qty {i.quantity}")))  # fmt: skip
        elif style == "till":
            out.append(f"{desc[:22]:24}{w.money(i.amount, symbol=False):>10}")
        elif style == "columns":
            price, amount = w.money(i.price, False), w.money(i.amount, False)
            out.append(f"{i.quantity:>5}  {desc:40} {price:>10} {amount:>12}")
        elif style == "x":
            out.append(f"{i.quantity} x {desc} @ {w.money(i.price)} = {w.money(i.amount)}")
        elif style == "bullets":
            out.append(f"- {desc} ({i.quantity} {i.unit}): {w.money(i.amount)}")
        else:
            out.append(
                f"{desc} | {i.quantity} | {w.money(i.price, False)} | {w.money(i.amount, False)}"
            )
    if priced:
        total_label = rng.choice(kind.totals)
        if rng.random() < 0.6 and w.tax_rate:
            out += [
                f"Subtotal {w.money(w.net)}",
                f"{w.locale.tax} {w.tax_rate:g}% {w.money(w.tax)}",
            ]
        out.append(f"{total_label} {w.money(w.net + w.tax)}")
    return out


def _clauses(rng: random.Random, ctx: dict[str, str]) -> list[str]:
    picked = rng.sample(_CLAUSES, rng.randint(2, 8))
    return [_fill(c, {**ctx, "n": str(n)}) for n, c in enumerate(picked, start=1)]


def _body(rng: random.Random, w: World, label: str, ctx: dict[str, str], terse: bool) -> list[str]:
    kind = KINDS[label]
    return _clauses(rng, ctx) if label == "contract" else _items(rng, w, kind, terse)


def _fields(rng: random.Random, kind: Kind, ctx: dict[str, str], most: int) -> list[str]:
    picked = rng.sample(kind.fields, min(len(kind.fields), rng.randint(1, most)))
    return [_fill(rng.choice(f), ctx) for f in picked]


def _some(
    rng: random.Random, options: tuple[str, ...], ctx: dict[str, str], lo: int, hi: int
) -> list[str]:
    return [_fill(s, ctx) for s in rng.sample(options, min(len(options), rng.randint(lo, hi)))]


def formal(rng: random.Random, w: World, label: str, ctx: dict[str, str]) -> list[str]:
    kind = KINDS[label]
    lines = [w.seller.name] if rng.random() < 0.7 else []
    if rng.random() < 0.5:
        lines += [w.seller.street, f"{w.seller.postcode} {w.seller.city}"]
    title = rng.choice(kind.titles)
    lines += ["", title] if title else []
    lines += ["", *_fields(rng, kind, ctx, 5), ""]
    lines += _some(rng, kind.intros, ctx, 0, 1)
    lines += _some(rng, kind.cites, ctx, 0, 1)
    lines += ["", *_body(rng, w, label, ctx, False), ""]
    lines += _some(rng, kind.closings, ctx, 1, 3)
    return lines


def email(rng: random.Random, w: World, label: str, ctx: dict[str, str]) -> list[str]:
    kind = KINDS[label]
    lines = []
    sender, recipient = (w.buyer, w.seller) if label == "purchase_order" else (w.seller, w.buyer)
    if rng.random() < 0.7:
        lines += [f"From: {sender.email}", f"To: {recipient.email}"]
        lines += [f"Subject: {_fill(rng.choice(kind.subjects), ctx)}", ""]
    greeting = rng.choice(
        ("Hi {contact},", "Dear {contact},", "Hello,", "Dear Sir or Madam,", "Hi all,")
    )
    lines += [_fill(greeting, ctx), ""]
    lines += _some(rng, kind.intros, ctx, 1, 1) + _some(rng, kind.cites, ctx, 0, 1)
    if rng.random() < 0.4:
        lines += _fields(rng, kind, ctx, 3)
    lines += ["", *_body(rng, w, label, ctx, False), ""]
    lines += _some(rng, kind.closings, ctx, 1, 2)
    signoff = rng.choice(("Best regards,", "Kind regards,", "Thanks,", "Cheers,", "Sincerely,"))
    return [*lines, "", signoff, sender.contact, sender.name]


def terse(rng: random.Random, w: World, label: str, ctx: dict[str, str]) -> list[str]:
    kind = KINDS[label]
    lines = [w.seller.name.upper(), w.seller.city.upper()]
    title = rng.choice(kind.titles)
    lines += [title.upper()] if title and rng.random() < 0.7 else []
    lines += _fields(rng, kind, ctx, 3)
    lines += _body(rng, w, label, ctx, True)
    lines += _some(rng, kind.closings, ctx, 0, 2)
    return [line.upper() for line in lines] if rng.random() < 0.5 else lines


def prose(rng: random.Random, w: World, label: str, ctx: dict[str, str]) -> list[str]:
    kind = KINDS[label]
    title = rng.choice(kind.titles) if rng.random() < 0.4 else ""
    text = _fill(rng.choice(kind.prose), ctx)
    if rng.random() < 0.4:
        text += " " + " ".join(_some(rng, kind.closings, ctx, 1, 2))
    tail = [rng.choice(("Signed: ________", w.seller.contact, w.seller.name, ""))]
    return [*([title, ""] if title else []), text, "", *tail]


def fields(rng: random.Random, w: World, label: str, ctx: dict[str, str]) -> list[str]:
    kind = KINDS[label]
    title = rng.choice(kind.titles)
    lines = [title] if title else []
    lines += [f"From: {w.seller.name}", *_fields(rng, kind, ctx, 6)]
    lines += _body(rng, w, label, ctx, rng.random() < 0.3)
    return lines + _some(rng, kind.closings, ctx, 0, 1)


Shape = Callable[[random.Random, World, str, dict[str, str]], list[str]]
SHAPES: tuple[tuple[Shape, float], ...] = (
    (formal, 0.3), (email, 0.25), (terse, 0.15), (prose, 0.15), (fields, 0.15),
)  # fmt: skip
