"""Documents written one by one, not generated: 220 of each doc-type label, 150 in English
and 14 in each of German, French, Spanish, Italian and Dutch (`<label>/<lang>-<nnn>.txt`).

Why: trained on generators alone (corpus.doc_type, corpus.varied), the demo models learn
the generators' habits, however varied their slots (issue 38). They were written on
2026-12-06 in two rounds by twelve writers, one per label a round, each given only the
label definitions and a list of the variety real paperwork has (countries, senders,
e-mails, till slips, scans, headings in other words or none, documents that cite other
kinds). The first round wrote `en-001`..`en-100` and `<lang>-001`..`-008`; the second
(`en-101`.., `<lang>-009`..) was asked for border cases: half of each writer's documents
share the surface of a neighbouring kind (an invoice marked paid, a quotation accepted
by signature, a delivery note quoting the order) while their substance stays their own.
The writers did not see the blind evaluation set (samples/eval/), the generators, the
models or each other's work, and no document was filled from a template. The files are
frozen: a document the models get wrong is not edited.

Every fifth document of each label and language (by file name) is the validation split,
which the held-out gates read and training never does; the rest is the training split.
The blind set stays out of both.
"""

from __future__ import annotations

from pathlib import Path

from corpus.doc_type import LABELS, LabelledDocument

ROOT = Path(__file__).resolve().parent
LANGUAGES = ("en", "de", "fr", "es", "it", "nl")
SPLITS = ("train", "validation")
VALIDATION_EVERY = 5


def _split(label: str, lang: str, split: str) -> list[LabelledDocument]:
    """One label's and language's documents of `split`, by file name."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}")
    out = []
    for i, path in enumerate(sorted((ROOT / label).glob(f"{lang}-*.txt"))):
        if (i % VALIDATION_EVERY == VALIDATION_EVERY - 1) == (split == "validation"):
            text = path.read_text(encoding="utf-8")
            out.append(LabelledDocument(f"written/{label}/{path.stem}", text, label))
    return out


def documents(split: str, languages: tuple[str, ...] = ("en",)) -> list[LabelledDocument]:
    """The `split` of the documents in `languages`, labelled by document type; in a fixed
    order (label, language, file name). Ids are `written/<label>/<file stem>`."""
    return [d for label in LABELS for lang in languages for d in _split(label, lang, split)]


def by_language(split: str, per_label: int | None = None) -> list[LabelledDocument]:
    """The `split` of every language's documents, labelled by language; at most `per_label`
    of each language and label (None: all), so that English, which has 100 a label against
    the others' 8, can be kept from outweighing them."""
    return [
        LabelledDocument(d.id, d.text, lang)
        for lang in LANGUAGES
        for label in LABELS
        for d in _split(label, lang, split)[:per_label]
    ]
