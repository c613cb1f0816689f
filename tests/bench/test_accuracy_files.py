"""bench/accuracy_files.py on a tiny input: it reads files through docq.extract, classifies
them with the published model and writes a well-formed report (no accuracy asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import accuracy_files
from corpus.doc_type import LABELS

REPOSITORY = Path(__file__).resolve().parents[2] / "model_repository"


def test_scans_take_each_image_format_in_turn() -> None:
    forms = [accuracy_files.form_of("scan", i) for i in range(8)]
    assert [f.image for f in forms] == [*accuracy_files.SCAN_IMAGES] * 2
    assert {f.dpi for f in forms} == {300} and not any(f.bilevel for f in forms)
    assert accuracy_files.form_of("pdf", 0).name == "pdf"


def test_confusion_counts_every_pair_and_only_those() -> None:
    got = accuracy_files.confusion(
        ["invoice", "invoice", "receipt"], ["invoice", "receipt", "receipt"]
    )
    assert got["invoice"]["invoice"] == 1 and got["invoice"]["receipt"] == 1
    assert got["receipt"]["receipt"] == 1
    assert sum(sum(row.values()) for row in got.values()) == 3
    assert set(got) == set(LABELS) and all(set(row) == set(LABELS) for row in got.values())


# About 25 s on two idle cores (torch's import for conversion.parity, 12 documents through
# ONNX Runtime), over a minute on shared ones.
@pytest.mark.slow
def test_the_bench_writes_a_report_that_adds_up(tmp_path: Path) -> None:
    if not (REPOSITORY / "doc-type" / "1" / "model.onnx").exists():
        pytest.fail("the demo model is not built: run `make model` first")
    out = tmp_path / "accuracy.json"
    accuracy_files.main(["--n", "6", "--forms", "text,pdf", "--out", str(out)])
    report = json.loads(out.read_text())
    assert report["documents"] == 6 and len(report["model_sha256"]) == 64
    assert set(report["forms"]) == {"text", "pdf"}
    for name, form in report["forms"].items():
        hits = sum(form["confusion"][label][label] for label in LABELS)
        assert sum(sum(row.values()) for row in form["confusion"].values()) == 6
        assert form["accuracy"] == round(hits / 6, 4)
        assert len(form["misses"]) == 6 - hits
        assert form["support"] == {
            label: sum(form["confusion"][label].values()) for label in LABELS
        }
        assert form["extraction_failed"] == 0 and form["chars_mean"] > 200, name
        assert form["target"] == accuracy_files.TARGETS[name]
    # The text form is the reference the other forms' words are compared with.
    assert report["forms"]["text"]["word_ratio_to_text_form"]["min"] == 1.0
    assert 0.3 < report["forms"]["pdf"]["word_ratio_to_text_form"]["mean"] < 1.0
