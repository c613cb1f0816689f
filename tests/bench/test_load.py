"""bench/load.py: the JSON made from Locust's own statistics CSV, written by Locust's
StatsCSV from logged requests (in a process of its own: importing Locust monkey-patches
the interpreter with gevent)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.load import summarize
from devstack.services import REPO

WRITE_CSV = """
import csv, sys
from locust.env import Environment
from locust.stats import PERCENTILES_TO_REPORT, StatsCSV

stats = (env := Environment()).stats
for ms in [10] * 60 + [20] * 38 + [1000] * 2:  # 100 uploads: p50 10 ms, p99 1 s
    stats.log_request("POST", "/v1/jobs", ms, 10)
stats.log_request("GET", "/v1/jobs/[id]", 5, 10)
stats.log_error("GET", "/v1/jobs/[id]", "status answered 500")
stats.log_request("JOB", "8 documents to results (load-a)", 900, 8)
stats.log_request("REFUSED", "429 upload, retried after Retry-After", 3, 0)
with open(sys.argv[1], "w", newline="") as f:
    StatsCSV(env, PERCENTILES_TO_REPORT).requests_csv(csv.writer(f))
"""


def test_the_summary_keeps_endpoints_jobs_429s_and_failures_apart(tmp_path: Path) -> None:
    path = tmp_path / "load_stats.csv"
    subprocess.run([sys.executable, "-c", WRITE_CSV, str(path)], cwd=REPO, check=True)

    summary = summarize(path)
    assert set(summary["endpoints"]) == {"POST /v1/jobs", "GET /v1/jobs/[id]"}
    upload = summary["endpoints"]["POST /v1/jobs"]
    assert (upload["requests"], upload["failures"]) == (100, 0)
    assert upload["p50_ms"] == 10 and upload["p99_ms"] == 1000
    assert summary["requests"] == 101 and summary["failures"] == 1
    assert set(summary["jobs"]) == {"8 documents to results (load-a)"}
    assert summary["job_failures"] == 0
    assert summary["uploads_refused_429"] == 1
