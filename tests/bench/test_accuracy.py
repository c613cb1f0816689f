"""bench/accuracy.py: it reads either set's forms through docq.extract, scores predictions
honestly (misses, failures, the frozen bytes) and writes a report that adds up (no accuracy
asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import accuracy, eval_forms
from bench.eval_forms import frozen, items, sha256, unseen
from corpus.doc_type import LABELS as DOC_TYPES

REPOSITORY = Path(__file__).resolve().parents[2] / "model_repository"
LABELS = ["invoice", "receipt", "quotation"]


def _read(file: str, label: str, text: str, error: str | None = None) -> dict[str, object]:
    return {"file": file, "label": label, "frozen": False, "type": "text/plain",
            "text": text, "error": error, "seconds": 0.1}  # fmt: skip


def test_score_counts_hits_misses_and_failed_extractions() -> None:
    reads = [
        _read("doc-type/invoice/001.pdf", "invoice", "INVOICE 1"),
        _read("doc-type/invoice/002.pdf", "invoice", "x" * 300),
        _read("doc-type/receipt/001.pdf", "receipt", "", error="no_text: blank"),
        _read("doc-type/quotation/001.pdf", "quotation", "QUOTE"),
    ]
    # the failed one is predicted "receipt" from its empty text: still a miss
    target = accuracy.TARGETS["blind"]["pdf"]
    got = accuracy.score(reads, ["invoice", "receipt", "receipt", "quotation"], LABELS, target)
    assert got["n"] == 4 and got["accuracy"] == 0.5 and got["target"] == 0.97
    assert got["per_label"] == {"invoice": 0.5, "receipt": 0.0, "quotation": 1.0}
    assert got["confusion"]["invoice"]["receipt"] == 1
    assert got["confusion"]["receipt"]["(extraction failed)"] == 1
    assert got["extraction_failed"] == 1 and got["bytes_match_forms_sha256"] == 0
    misses = {m["id"]: m for m in got["misses"]}
    assert set(misses) == {"doc-type/invoice/002", "doc-type/receipt/001"}
    assert len(misses["doc-type/invoice/002"]["text_start"]) == accuracy.TEXT_START


def test_confusion_counts_every_pair_and_only_those() -> None:
    got = accuracy.confusion(
        ["invoice", "invoice", "receipt"], ["invoice", "receipt", "receipt"], list(DOC_TYPES)
    )
    assert got["invoice"]["invoice"] == 1 and got["invoice"]["receipt"] == 1
    assert got["receipt"]["receipt"] == 1
    assert sum(sum(row.values()) for row in got.values()) == 3
    assert set(got) == set(DOC_TYPES) and all(set(row) == set(DOC_TYPES) for row in got.values())


def test_a_rendered_pdf_is_read_through_its_text_layer() -> None:
    got = accuracy.read_item(items()[0], "pdf", accuracy.Limits(), frozen())
    assert got["type"] == "application/pdf" and got["error"] is None and got["frozen"] is True
    assert "Rechnung" in got["text"] and got["file"] == "doc-lang/de/001.pdf"


def test_a_generated_document_is_read_but_not_frozen() -> None:
    got = accuracy.read_item(unseen(1, 2112)[0], "text", accuracy.Limits(), frozen())
    assert got["type"] == "text/plain" and got["error"] is None and got["frozen"] is None
    assert len(got["text"]) > 200 and got["file"].endswith("-2112-0000.txt")


# torch's import (conversion.parity) and the model's load: about half a minute on two idle
# cores, more on shared ones.
@pytest.mark.slow
def test_the_blind_set_gives_a_report_that_adds_up(tmp_path: Path) -> None:
    if not (REPOSITORY / "doc-type" / "1" / "model.onnx").exists():
        pytest.fail("the demo model is not built: run `make model` first")
    out = tmp_path / "report.json"
    # Every 29th in manifest order: 12 of the 348 doc-type documents, two a label.
    accuracy.main(["--model", "doc-type", "--forms", "text", "--every", "29",
                   "--processes", "1", "--walkthrough", "--out", str(out)])  # fmt: skip
    report = json.loads(out.read_text())
    text = report["forms"]["text"]
    hits = sum(text["confusion"][label][label] for label in report["labels"])
    assert text["n"] == report["documents"] == 12
    assert text["accuracy"] == round(hits / 12, 4) and len(text["misses"]) == 12 - hits
    assert text["bytes_match_forms_sha256"] == 12 and len(report["model_sha256"]) == 64
    walk = report["walkthrough"]
    assert walk["n"] == 9 and walk["accuracy"] == round((9 - len(walk["misses"])) / 9, 4)
    assert walk["bytes_match_forms_sha256"] is None and walk["extraction_failed"] == 0


# About 25 s on two idle cores (torch's import for conversion.parity, 12 documents through
# ONNX Runtime), over a minute on shared ones.
@pytest.mark.slow
def test_the_unseen_templates_give_a_report_that_adds_up(tmp_path: Path) -> None:
    if not (REPOSITORY / "doc-type" / "1" / "model.onnx").exists():
        pytest.fail("the demo model is not built: run `make model` first")
    out = tmp_path / "accuracy.json"
    accuracy.main(["--set", "unseen", "--n", "6", "--forms", "text,pdf", "--out", str(out)])
    report = json.loads(out.read_text())
    assert report["documents"] == 6 and len(report["model_sha256"]) == 64
    assert set(report["forms"]) == {"text", "pdf"}
    for name, form in report["forms"].items():
        hits = sum(form["confusion"][label][label] for label in DOC_TYPES)
        assert sum(sum(row.values()) for row in form["confusion"].values()) == 6
        assert form["accuracy"] == round(hits / 6, 4)
        assert len(form["misses"]) == 6 - hits
        assert form["support"] == {
            label: sum(form["confusion"][label].values()) for label in DOC_TYPES
        }
        assert form["extraction_failed"] == 0 and form["chars_mean"] > 200, name
        assert form["target"] == accuracy.TARGETS["unseen"][name]
        assert form["bytes_match_forms_sha256"] is None


def test_render_writes_the_frozen_bytes_and_fails_on_any_that_differ(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    one = items()[0]  # its PDF and DOCX are frozen
    monkeypatch.setattr(eval_forms, "items", lambda: [one])
    monkeypatch.setattr(eval_forms, "FORMS", ("text", "pdf", "docx"))  # a scan takes seconds
    real = frozen()
    pdf, docx = one.name("pdf"), one.name("docx")
    monkeypatch.setattr(accuracy, "frozen", lambda: {pdf: real[pdf], docx: "0" * 64})
    with pytest.raises(SystemExit) as done:
        accuracy.main(["--render", str(tmp_path), "--processes", "1"])
    out = capsys.readouterr().out
    assert done.value.code == 1 and docx in out and pdf not in out
    for name in (pdf, docx):
        assert sha256((tmp_path / name).read_bytes()) == real[name]
