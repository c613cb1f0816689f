"""corpus/varied: doc-type's second generator, in the shapes real paperwork takes."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from corpus.doc_type import LABELS
from corpus.varied import document, generate, main
from corpus.varied.augment import drop_words, shuffle_blocks
from corpus.varied.kinds import KINDS
from corpus.varied.shapes import SHAPES, context
from corpus.varied.world import world


def test_same_seed_same_documents_and_seeds_differ() -> None:
    assert generate(30, 7) == generate(30, 7)
    assert not {d.text for d in generate(30, 7)} & {d.text for d in generate(30, 8)}


def test_labels_balanced_and_ids_name_the_generator() -> None:
    docs = generate(61, 3)
    counts = Counter(d.label for d in docs)
    assert set(counts) == set(LABELS) and max(counts.values()) - min(counts.values()) <= 1
    assert [d.id for d in docs[:2]] == ["var-3-000000", "var-3-000001"]


def test_every_label_has_its_wordings() -> None:
    assert set(KINDS) == set(LABELS)


@pytest.mark.parametrize("label", LABELS)
def test_every_shape_writes_every_label_with_every_placeholder_filled(label: str) -> None:
    # A placeholder a kind names and the context lacks raises KeyError here, for any shape.
    for i in range(40):
        rng = random.Random(i)
        w = world(rng)
        ctx = context(rng, w, label)
        for shape, _ in SHAPES:
            text = "\n".join(shape(rng, w, label, ctx))
            assert text.strip() and "{" not in text, (shape.__name__, text)


def test_documents_cite_other_kinds_and_some_have_no_heading() -> None:
    docs = generate(600, 11)
    invoices = [d.text.lower() for d in docs if d.label == "invoice"]
    # Distractors: an invoice naming an order or a delivery note, a quotation asking for one.
    assert sum("order" in t for t in invoices) > 10
    quotes = [d.text.lower() for d in docs if d.label == "quotation"]
    assert sum("purchase order" in t for t in quotes) > 5
    titles = {t.lower() for k in KINDS.values() for t in k.titles if t}
    first_lines = [d.text.strip().splitlines()[0].strip().lower() for d in docs]
    assert sum(line not in titles for line in first_lines) > len(docs) / 2


def test_lengths_run_from_a_line_to_a_page() -> None:
    words = [len(d.text.split()) for d in generate(300, 5)]
    assert min(words) < 30 and max(words) > 250


def test_augmentation_drops_words_and_moves_blocks() -> None:
    rng = random.Random(1)
    text = "\n\n".join(f"block {i} alpha beta gamma delta" for i in range(8))
    assert shuffle_blocks(rng, text) != text
    assert sorted(shuffle_blocks(rng, text).split("\n\n")) == sorted(text.split("\n\n"))
    dropped = drop_words(rng, text, 0.5)
    assert 0 < len(dropped.split()) < len(text.split())


def test_a_document_depends_on_its_seed_and_position_only() -> None:
    assert document(9, 4, "receipt") == document(9, 4, "receipt")
    assert document(9, 4, "receipt").text != document(9, 5, "receipt").text


def test_main_writes_the_files(tmp_path: Path) -> None:
    main(["--n", "6", "--seed", "2", "--out", str(tmp_path)])
    assert len(list(tmp_path.glob("var-2-*.txt"))) == 6
