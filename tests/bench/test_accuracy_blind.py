"""bench/accuracy_blind.py: it reads the blind set's forms through docq.extract, scores
predictions honestly (misses, failures, the frozen bytes) and writes a report that adds up
(no accuracy asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import accuracy_blind
from bench.eval_forms import items

REPOSITORY = Path(__file__).resolve().parents[2] / "model_repository"
LABELS = ["invoice", "receipt", "quotation"]


def _read(file: str, label: str, text: str, error: str | None = None) -> dict[str, object]:
    return {"file": file, "label": label, "sha256": "0" * 64, "type": "text/plain",
            "text": text, "error": error, "seconds": 0.1}  # fmt: skip


def test_score_counts_hits_misses_and_failed_extractions() -> None:
    reads = [
        _read("doc-type/invoice/001.pdf", "invoice", "INVOICE 1"),
        _read("doc-type/invoice/002.pdf", "invoice", "x" * 300),
        _read("doc-type/receipt/001.pdf", "receipt", "", error="no_text: blank"),
        _read("doc-type/quotation/001.pdf", "quotation", "QUOTE"),
    ]
    # the failed one is predicted "receipt" from its empty text: still a miss
    got = accuracy_blind.score(reads, ["invoice", "receipt", "receipt", "quotation"], LABELS,
                               "pdf")  # fmt: skip
    assert got["n"] == 4 and got["accuracy"] == 0.5 and got["target"] == 0.97
    assert got["per_label"] == {"invoice": 0.5, "receipt": 0.0, "quotation": 1.0}
    assert got["confusion"]["invoice"]["receipt"] == 1
    assert got["confusion"]["receipt"]["(extraction failed)"] == 1
    assert got["extraction_failed"] == 1 and got["bytes_match_forms_sha256"] == 0
    misses = {m["id"]: m for m in got["misses"]}
    assert set(misses) == {"doc-type/invoice/002", "doc-type/receipt/001"}
    assert len(misses["doc-type/invoice/002"]["text_start"]) == accuracy_blind.TEXT_START


def test_a_rendered_pdf_is_read_through_its_text_layer() -> None:
    got = accuracy_blind.read_item(items()[0], "pdf", None, accuracy_blind.Limits())
    assert got["type"] == "application/pdf" and got["error"] is None
    assert "Rechnung" in got["text"] and got["file"] == "doc-lang/de/001.pdf"


# torch's import (conversion.parity) and the model's load: about half a minute on two idle
# cores, more on shared ones.
@pytest.mark.slow
def test_the_bench_writes_a_report_that_adds_up(tmp_path: Path) -> None:
    if not (REPOSITORY / "doc-type" / "1" / "model.onnx").exists():
        pytest.fail("the demo model is not built: run `make model` first")
    few = [i for i in items(("doc-type",)) if i.file.endswith(("/001.txt", "/002.txt"))]
    reads = {"text": [accuracy_blind.read_item(i, "text", None, accuracy_blind.Limits())
                      for i in few]}  # fmt: skip
    (tmp_path / "reads.json").write_text(json.dumps({"model": "doc-type", "reads": reads}))
    out, reads_file = tmp_path / "report.json", str(tmp_path / "reads.json")
    accuracy_blind.main(["--model", "doc-type", "--forms", "text", "--reads", reads_file,
                         "--walkthrough", "--out", str(out)])  # fmt: skip
    report = json.loads(out.read_text())
    text = report["forms"]["text"]
    hits = sum(text["confusion"][label][label] for label in report["labels"])
    assert text["n"] == len(few) == 12
    assert text["accuracy"] == round(hits / 12, 4) and len(text["misses"]) == 12 - hits
    assert text["bytes_match_forms_sha256"] == 12 and len(report["model_sha256"]) == 64
    assert report["walkthrough"]["n"] == 9
    assert report["walkthrough"]["right"] == sum(
        f["label"] == f["predicted"] for f in report["walkthrough"]["files"]
    )
