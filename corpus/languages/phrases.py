"""The wordings one language's business documents are written from (corpus.doc_lang)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Phrases:
    """What one language writes on business documents."""

    months: tuple[str, ...]
    invoice: tuple[str, ...]
    reminder: tuple[str, ...]
    confirmation: tuple[str, ...]
    letter: tuple[str, ...]
    fields: dict[str, str]  # number, date, due, customer, total, net, vat, page, subject
    columns: tuple[str, str, str, str]  # description, quantity, unit price, amount
    greetings: tuple[str, ...]
    closings: tuple[str, ...]
    invoice_lines: tuple[str, ...]
    reminder_lines: tuple[str, ...]
    confirmation_lines: tuple[str, ...]
    letter_lines: tuple[str, ...]
    items: tuple[str, ...]
