"""conversion/parity.py: the numbers of the parity gate and its verdict."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from conversion import parity
from conversion.parity import Thresholds, Windowing, verdict
from corpus.doc_type import LABELS, LabelledDocument, generate
from docq.text.tokenizing import load_tokenizer

TOKENIZER = Path(__file__).resolve().parents[2] / "model_repository" / "doc-type" / "tokenizer"
WINDOWING = Windowing(max_seq_len=128, stride=16, batch_size=4)

Batch = tuple[np.ndarray, np.ndarray]


def _gold_runner(docs: list[LabelledDocument]) -> Callable[[Batch], np.ndarray]:
    """Logits that favour each window's first content token's parity: deterministic, cheap."""

    def run(batch: Batch) -> np.ndarray:
        ids, _ = batch
        logits = np.zeros((ids.shape[0], len(LABELS)), dtype=np.float32)
        logits[np.arange(ids.shape[0]), ids[:, 1] % len(LABELS)] = 4.0
        return logits

    return run


@pytest.fixture(scope="module")
def docs() -> list[LabelledDocument]:
    return generate(24, 5)


@pytest.fixture(scope="module")
def tokenizer():  # type: ignore[no-untyped-def]
    return load_tokenizer(TOKENIZER)


@pytest.mark.parametrize(
    ("agreement", "diff_pt", "passed"),
    [
        (1.0, 0.0, True),
        (0.995, 0.05, True),  # both exactly at the threshold
        (0.995, -0.05, True),
        (0.9949, 0.0, False),
        (1.0, 0.051, False),
        (1.0, -0.06, False),
        (float("nan"), 0.0, False),
        (1.0, float("nan"), False),
    ],
)
def test_verdict_applies_both_thresholds(agreement: float, diff_pt: float, passed: bool) -> None:
    ok, failures = verdict(agreement, diff_pt, Thresholds())
    assert ok is passed
    assert bool(failures) is not passed


def test_identical_runners_agree_fully(docs, tokenizer) -> None:  # type: ignore[no-untyped-def]
    run = _gold_runner(docs)
    report = parity.compare(
        run, run, docs, LABELS, tokenizer, names=("a", "b"), windowing=WINDOWING
    )
    assert report.passed and not report.failures
    assert report.agreement == 1.0 and report.accuracy_diff_pt == 0.0
    assert report.max_abs_logit_diff == 0.0 and report.mean_abs_logit_diff == 0.0
    assert report.documents == 24 and report.windows >= 24
    assert report.reference_accuracy == report.candidate_accuracy


def test_small_logit_noise_is_measured_but_passes(docs, tokenizer) -> None:  # type: ignore[no-untyped-def]
    run = _gold_runner(docs)
    report = parity.compare(
        run,
        lambda batch: run(batch) + np.float32(0.01),
        docs,
        LABELS,
        tokenizer,
        names=("a", "b"),
        windowing=WINDOWING,
    )
    assert report.passed
    assert report.max_abs_logit_diff == pytest.approx(0.01, abs=1e-6)
    assert report.mean_abs_logit_diff == pytest.approx(0.01, abs=1e-6)


def test_flipped_labels_fail_on_agreement_and_accuracy(docs, tokenizer) -> None:  # type: ignore[no-untyped-def]
    run = _gold_runner(docs)

    def flipped(batch: Batch) -> np.ndarray:
        return np.roll(run(batch), 1, axis=1)  # every window votes for the next label

    report = parity.compare(
        run, flipped, docs, LABELS, tokenizer, names=("a", "b"), windowing=WINDOWING
    )
    assert not report.passed
    assert report.agreement < 0.995
    assert any("agreement" in f for f in report.failures)
    assert report.disagreements and set(report.disagreements[0]) == {
        "id",
        "gold",
        "reference",
        "candidate",
    }


def test_non_finite_candidate_never_passes(docs, tokenizer) -> None:  # type: ignore[no-untyped-def]
    run = _gold_runner(docs)

    def broken(batch: Batch) -> np.ndarray:
        out = run(batch)
        out[0, 0] = np.nan
        return out

    report = parity.compare(
        run, broken, docs, LABELS, tokenizer, names=("a", "b"), windowing=WINDOWING
    )
    assert not report.passed
    assert "non-finite" in " ".join(report.failures)


def test_gold_labels_must_be_model_labels(docs, tokenizer) -> None:  # type: ignore[no-untyped-def]
    run = _gold_runner(docs)
    with pytest.raises(ValueError, match="not labels of the model"):
        parity.compare(run, run, docs, LABELS[:2], tokenizer, names=("a", "b"))


def test_report_is_written_as_json_and_markdown(docs, tokenizer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run = _gold_runner(docs)
    report = parity.compare(run, run, docs, LABELS, tokenizer, names=("ref", "cand"))
    json_path, md_path = report.write(tmp_path / "sub" / "r")
    data = json.loads(json_path.read_text())
    assert data["passed"] and data["thresholds"] == {
        "max_accuracy_diff_pt": 0.05,
        "min_agreement": 0.995,
    }
    assert parity.ParityReport.from_json(json_path.read_text()) == report
    md = md_path.read_text()
    assert md.startswith("#### PASS: `cand` vs `ref`")
    assert "| accuracy difference | +0.000 pt (needs within" in md


def test_cached_runner_runs_each_batch_once() -> None:
    calls: list[int] = []

    def run(batch: Batch) -> np.ndarray:
        calls.append(batch[0].shape[0])
        return np.zeros((batch[0].shape[0], 2), dtype=np.float32)

    cached = parity.cached(run)
    a = (np.ones((2, 3), dtype=np.int64), np.ones((2, 3), dtype=np.int64))
    b = (
        np.ones((3, 2), dtype=np.int64),
        np.ones((3, 2), dtype=np.int64),
    )  # same bytes, other shape
    for batch in (a, a, b, b):
        cached(batch)
    assert calls == [2, 3]


def test_documents_come_from_ndjson_or_a_demo_corpus(tmp_path: Path) -> None:
    path = tmp_path / "docs.ndjson"
    path.write_text('{"id": "a", "text": "INVOICE 1", "label": "invoice"}\n\n')
    assert parity.read_documents(path) == [LabelledDocument("a", "INVOICE 1", "invoice")]
    path.write_text('{"id": "a", "text": "x"}\n')
    with pytest.raises(ValueError, match=r"docs\.ndjson:1"):
        parity.read_documents(path)
    assert [d.label for d in parity.synthetic("doc-lang", 6, 1)] != []
    with pytest.raises(ValueError, match="unknown corpus"):
        parity.synthetic("nope", 1, 1)


def test_candidate_specs_are_parsed_or_refused(tiny_checkpoint: Path) -> None:
    from conversion.checkpoint import load_checkpoint

    model, _ = load_checkpoint(tiny_checkpoint)
    ids = np.array([[101, 2000, 102]], dtype=np.int64)
    batch = (ids, np.ones_like(ids))
    fp32 = parity.candidate("torch:fp32", model)(batch)
    bf16 = parity.candidate("torch:bf16:cpu", model)(batch)
    assert fp32.dtype == bf16.dtype == np.float32
    np.testing.assert_allclose(bf16, fp32, atol=0.05)
    for bad in ("torch", "onnx:", "gpu:model", "triton:no-slash"):
        with pytest.raises(ValueError, match="cannot read candidate"):
            parity.candidate(bad, model)
