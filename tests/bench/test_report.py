"""bench/report.py: the tables of saved CPU and GPU pipeline runs, with no service."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import report

REPO = Path(__file__).resolve().parents[2]


def test_a_saved_cpu_run_prints_its_table(capsys: pytest.CaptureFixture[str]) -> None:
    saved = json.loads((REPO / "bench" / "runs" / "pipeline-fused-cpu-2026-12-01.json").read_text())
    report.print_table(saved)
    out = capsys.readouterr().out
    assert f"docq bench: {saved['documents']} documents" in out
    assert json.dumps(saved["docq_docs_per_s"]) in out


def test_a_saved_gpu_run_is_summarised_and_shown_again(capsys: pytest.CaptureFixture[str]) -> None:
    path = REPO / "bench" / "runs" / "pipeline-defaults-h100-2026-12-06.json"
    saved = json.loads(path.read_text())
    saved["summary"].pop("cpu_bound_until_workers")  # its scaling phase left (issue 39)
    assert report.summarise_gpu(saved) == saved["summary"]
    report.show_gpu(saved)
    out = capsys.readouterr().out
    assert f"docq, {saved['docq']['workers']} bulk workers" in out
    assert "old architecture FP16, 8 workers" in out
