"""The fleet checker's judgement of a client's logs (bench/faults/check.py), on logs written
here: what it counts as lost and how it measures the answers during a fault. No fleet."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.faults.check import check

T0 = 1_000_000.0
FAULT = {"name": "halves", "applied": T0 + 10, "healed": T0 + 40, "client_cut": False}


def write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def attempt(key: str, sent: float, took: float, status: int, job: str = "") -> dict[str, Any]:
    a: dict[str, Any] = {"key": key, "sent": T0 + sent, "answered": T0 + sent + took}
    a.update(documents=1, webhook=False, status=status, json=True)
    if job:
        a["job"] = job
    else:
        a["code"] = "store_not_replicated"
    return a


def logs(tmp_path: Path, attempts: list[dict[str, Any]], jobs: list[dict[str, Any]]) -> None:
    write(tmp_path / "attempts.jsonl", attempts)
    write(tmp_path / "jobs.jsonl", jobs)
    write(tmp_path / "deliveries.jsonl", [])


def test_the_longest_answer_during_a_fault_counts_the_uploads_sent_while_it_held(
    tmp_path: Path,
) -> None:
    logs(
        tmp_path,
        [
            attempt("a", 5, 30.0, 202, "j1"),  # sent before the fault: not its answer
            attempt("b", 12, 1.1, 503),
            attempt("b", 14, 10.0, 503),  # the slowest answer sent during the split
            attempt("b", 38, 4.0, 202, "j2"),
            attempt("c", 45, 12.0, 202, "j3"),  # after the heal
        ],
        [{"job": j, "final_seen": T0 + 60, "status": "succeeded"} for j in ("j1", "j2", "j3")]
        + [{"job": j, "key": j, "results": [{"id": j, "label": "x"}]} for j in ("j1", "j2", "j3")],
    )
    expected = {"j1": "x", "j2": "x", "j3": "x"}
    report = check(tmp_path, expected, [FAULT], T0 + 70)
    assert report["violations"] == []
    assert report["recovery"] == [
        {"fault": "halves", "first_202_after_heal_s": 2.0, "longest_answer_s": 10.0}
    ]


def test_a_job_answered_202_without_its_results_is_a_loss(tmp_path: Path) -> None:
    logs(
        tmp_path,
        [attempt("a", 12, 0.1, 202, "j1")],
        [{"job": "j1", "key": "a", "results": []}],
    )
    report = check(tmp_path, {"j1": "x"}, [FAULT], T0 + 70)
    assert report["lost"] == 1
    assert any("never seen final" in v for v in report["violations"])
