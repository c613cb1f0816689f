"""conversion/demo_train.py's corpus: both generators and the written documents' training
split in training; each generator from other seeds, and the written validation split, in
the held-out gate; nothing of the gate trained on; each source's accuracy recorded apart.
corpus.written: its splits are disjoint and fixed, and every file is read."""

from __future__ import annotations

from collections import Counter

from conversion import demo_lang, demo_train
from corpus import written
from corpus.doc_type import LABELS, LabelledDocument


def test_training_and_heldout_read_every_source_and_share_nothing() -> None:
    train, held = demo_train.training_documents(), demo_train.heldout_documents()
    sources = Counter(d.id.split("-")[0].split("/")[0] for d in train)
    assert sources == {
        "doc": demo_train.TRAIN_DOCS,
        "var": demo_train.VARIED_DOCS,
        "written": len(written.documents("train", written.LANGUAGES)),
    }
    assert len(held) == sum(n for n, _ in demo_train.HELDOUT) + len(written.documents("validation"))
    assert not {d.text for d in train} & {d.text for d in held}
    assert not {d.id for d in train} & {d.id for d in held}
    assert Counter(d.label for d in held).keys() == set(LABELS)


def test_accuracy_is_recorded_per_source() -> None:
    held = demo_train.heldout_documents()
    (n_doc, seed_doc), (n_var, seed_var) = demo_train.HELDOUT
    wrong = {0, 1, n_doc, n_doc + 1, n_doc + 2, n_doc + n_var}  # 2 doc_type, 3 varied, 1 written
    predicted = ["(wrong)" if i in wrong else d.label for i, d in enumerate(held)]
    got = demo_train.by_source(predicted, held)
    n_written = len(held) - n_doc - n_var
    assert got == {
        f"corpus.doc_type (seed {seed_doc})": {"n": n_doc, "accuracy": (n_doc - 2) / n_doc},
        f"corpus.varied (seed {seed_var})": {"n": n_var, "accuracy": (n_var - 3) / n_var},
        "corpus.written (validation split)": {
            "n": n_written,
            "accuracy": (n_written - 1) / n_written,
        },
    }


def test_the_written_documents_split_one_in_five_and_are_all_read() -> None:
    files = sorted(p for p in written.ROOT.glob("*/*.txt"))
    train = written.documents("train", written.LANGUAGES)
    held = written.documents("validation", written.LANGUAGES)
    assert len(train) + len(held) == len(files)
    assert not {d.id for d in train} & {d.id for d in held}
    for label in LABELS:  # 150 English a label: 120 train, 30 validation
        assert sum(d.label == label for d in written.documents("validation")) >= 28
    assert all(d.text.strip() for d in train + held)


def test_doc_lang_reads_every_language_of_the_written_documents_balanced() -> None:
    train = written.by_language("train", demo_lang.WRITTEN_TRAIN)
    held = written.by_language("validation", demo_lang.WRITTEN_HELDOUT)
    per_label = demo_lang.WRITTEN_TRAIN, demo_lang.WRITTEN_HELDOUT
    assert per_label == (12, 2)  # every training and validation document of the other languages
    assert Counter(d.label for d in train) == dict.fromkeys(written.LANGUAGES, 12 * len(LABELS))
    assert Counter(d.label for d in held) == dict.fromkeys(written.LANGUAGES, 2 * len(LABELS))
    assert not {d.id for d in train} & {d.id for d in held}


def test_documents_are_labelled_documents() -> None:
    assert all(isinstance(d, LabelledDocument) for d in demo_train.heldout_documents()[:5])
