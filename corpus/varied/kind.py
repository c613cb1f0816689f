"""What a kind of document is made of in corpus.varied: the wordings its shapes choose from
(corpus.varied.kinds has each kind's)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    titles: tuple[str, ...]  # "" is a document without a heading
    fields: tuple[tuple[str, ...], ...]  # each a choice of wordings; some of them are printed
    intros: tuple[str, ...]
    closings: tuple[str, ...]
    subjects: tuple[str, ...]
    prose: tuple[str, ...]  # the whole document in a paragraph
    cites: tuple[str, ...]  # lines naming the sale's other documents
    totals: tuple[str, ...]  # how the sum is labelled
    priced: float  # how often the items carry prices
