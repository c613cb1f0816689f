"""Seeded synthetic business correspondence in six languages: the `doc-lang` model's data.

A European company receives invoices, reminders, order confirmations and letters in the
languages of its suppliers; `doc-lang` routes each document to the team (or the model)
for its language. The documents are made hard the way real ones are: company names,
addresses, SKUs, IBANs and numbers carry no language; line items are often in English
whatever the document's language; a share of documents ends with an English legal
footer; and OCR noise garbles words. The label is the language the document is written
in, not the language of its boilerplate.

    python -m corpus.doc_lang --n 12 --seed 7 --out /tmp/lang/
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
from pathlib import Path

from corpus import fakes as fk
from corpus.doc_type import LabelledDocument
from corpus.languages.germanic import DUTCH, ENGLISH, GERMAN
from corpus.languages.phrases import Phrases
from corpus.languages.romance import FRENCH, ITALIAN, SPANISH
from corpus.layout import ocr_noise, paginate, party_block, table

# The model's label order (logit i is LANGUAGES[i]); never reorder, only append.
LANGUAGES: tuple[str, ...] = ("en", "de", "fr", "es", "it", "nl")


PHRASES: dict[str, Phrases] = {
    "en": ENGLISH,
    "de": GERMAN,
    "fr": FRENCH,
    "es": SPANISH,
    "it": ITALIAN,
    "nl": DUTCH,
}
# An English legal footer that suppliers print whatever the document's language.
_ENGLISH_FOOTERS = (
    "Registered office: {city}. Company registered in {country}. VAT {vat}.",
    "This document was generated electronically and is valid without signature.",
    "Please consider the environment before printing this document.",
)


def _date(p: Phrases, d: dt.date, numeric: bool) -> str:
    if numeric:
        return d.strftime("%d.%m.%Y" if p is not ENGLISH else "%d/%m/%Y")
    return f"{d.day} {p.months[d.month - 1]} {d.year}"


def _body(rng: random.Random, p: Phrases, kind: str, days: int, date: str) -> list[str]:
    bank = {
        "invoice": p.invoice_lines,
        "reminder": p.reminder_lines,
        "confirmation": p.confirmation_lines,
        "letter": p.letter_lines,
    }[kind]
    picked = rng.sample(bank, k=rng.randint(3, len(bank)))
    return [line.format(days=days, date=date) for line in picked]


def write(rng: random.Random, language: str) -> str:
    """One document written in `language`: an invoice, reminder, order confirmation or letter."""
    p = PHRASES[language]
    sender, recipient = fk.party(rng), fk.party(rng)
    m, issued = fk.money(rng), fk.date(rng)
    numeric = rng.random() < 0.5
    kind = rng.choice(("invoice", "invoice", "reminder", "confirmation", "letter"))
    title = rng.choice(
        {"invoice": p.invoice, "reminder": p.reminder, "confirmation": p.confirmation,
         "letter": p.letter}[kind]
    )  # fmt: skip
    no = fk.number(rng, ("INV", "RE", "F", "AB", "OC", "SO"), issued.year)
    days = rng.choice((7, 10, 14, 30))
    f = p.fields
    lines = [*sender.address_lines(), ""]
    lines += party_block(rng, recipient)
    lines += [
        "",
        f"{f['date']}: {_date(p, issued, numeric)}",
        f"{f['number']}: {no}",
    ]
    if rng.random() < 0.5:
        lines.append(f"{f['customer']}: {rng.randint(10000, 99999)}")
    lines += ["", f"{f['subject']}: {title}" if kind == "letter" else title, ""]
    contact = recipient.contact
    lines += [rng.choice(p.greetings).format(contact=contact), ""]
    due = _date(p, issued + dt.timedelta(days=days), numeric)
    lines += _body(rng, p, kind, days, due)
    if kind != "letter" or rng.random() < 0.3:
        # Line items: in the document's language, or the supplier's English catalogue.
        english = rng.random() < 0.25
        r = rng.random()
        n = (
            rng.randint(1, 6)
            if r < 0.8
            else rng.randint(7, 16)
            if r < 0.97
            else rng.randint(16, 30)
        )
        items = fk.line_items(rng, n)
        rows = []
        for i in items:
            text = i.description if english else rng.choice(p.items)
            rows.append((f"{i.sku} {text}", str(i.quantity), m(i.unit_price), m(i.amount)))
        lines += ["", *table(rng, p.columns, rows), ""]
        net = sum(i.amount for i in items)
        vat = rng.choice(fk.VAT_RATES)
        lines += [
            f"{f['net']}: {m(net)} {m.code}",
            f"{f['vat']} {vat:g}%: {m(net * vat / 100)} {m.code}",
            f"{f['total']}: {m(net * (1 + vat / 100), symbol=True)}",
        ]
        if kind in ("invoice", "reminder"):
            lines.append(f"{f['due']}: {due}")
    lines += ["", rng.choice(p.closings), sender.contact, sender.name]
    if rng.random() < 0.5:
        lines.append(f"IBAN: {fk.iban(rng)}")
    if rng.random() < 0.25:
        footer = rng.choice(_ENGLISH_FOOTERS)
        lines += ["", footer.format(city=sender.city, country=sender.country, vat=sender.vat_id)]
    return "\n".join(paginate(rng, lines, f"{title} {no}", rng.randint(45, 70)))


def document(seed: int, i: int, language: str) -> LabelledDocument:
    """The `i`-th document of a seed, written in `language`; depends on nothing else."""
    rng = random.Random(f"docq-lang:{seed}:{i}")
    return LabelledDocument(
        id=f"lang-{seed}-{i:06d}", text=ocr_noise(rng, write(rng, language)), label=language
    )


def generate(n: int, seed: int) -> list[LabelledDocument]:
    """`n` documents with balanced languages (counts differ by at most one), the same for a seed."""
    if n < 0:
        raise ValueError("n must be >= 0")
    labels = [LANGUAGES[i % len(LANGUAGES)] for i in range(n)]
    random.Random(f"docq-lang-labels:{seed}").shuffle(labels)
    return [document(seed, i, label) for i, label in enumerate(labels)]


def main(argv: list[str] | None = None) -> None:
    """Write `n` documents as `<id>.txt` files (the file name is the document id)."""
    parser = argparse.ArgumentParser(
        prog="python -m corpus.doc_lang", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--n", type=int, default=12, help="number of documents")
    parser.add_argument("--seed", type=int, default=7, help="corpus seed")
    parser.add_argument("--out", type=Path, required=True, help="folder for the .txt files")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for doc in generate(args.n, args.seed):
        (args.out / f"{doc.id}.txt").write_text(doc.text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
