"""conversion/demo_train.py's corpus: both generators in training and in the held-out gate,
the gate's documents never trained on, and each generator's accuracy recorded apart."""

from __future__ import annotations

from collections import Counter

from conversion import demo_train
from corpus.doc_type import LABELS, LabelledDocument


def test_training_and_heldout_read_both_generators_on_disjoint_seeds() -> None:
    train, held = demo_train.training_documents(), demo_train.heldout_documents()
    sources = Counter(d.id.split("-")[0] for d in train)
    assert sources == {"doc": demo_train.TRAIN_DOCS, "var": demo_train.VARIED_DOCS}
    assert len(held) == sum(n for n, _ in demo_train.HELDOUT)
    assert not {d.text for d in train} & {d.text for d in held}
    assert not {d.id for d in train} & {d.id for d in held}
    assert Counter(d.label for d in held).keys() == set(LABELS)


def test_accuracy_is_recorded_per_generator() -> None:
    held = demo_train.heldout_documents()
    n = demo_train.HELDOUT[0][0]
    wrong = {0, 1, n, n + 1, n + 2}  # two doc_type misses, three varied ones
    predicted = ["(wrong)" if i in wrong else d.label for i, d in enumerate(held)]
    got = demo_train.by_source(predicted, held)
    assert list(got) == list(demo_train.SOURCES)
    (n_doc, seed_doc), (n_var, seed_var) = demo_train.HELDOUT
    assert got["corpus.doc_type"] == {"n": n_doc, "seed": seed_doc, "accuracy": (n_doc - 2) / n_doc}
    assert got["corpus.varied"] == {"n": n_var, "seed": seed_var, "accuracy": (n_var - 3) / n_var}


def test_documents_are_labelled_documents() -> None:
    assert all(isinstance(d, LabelledDocument) for d in demo_train.heldout_documents()[:5])
