"""bench/locustfile.py: Locust loads it as `make load` does, and the JSON made from Locust's
own statistics keeps endpoints, jobs, 429s and failures apart. Each in a process of its own:
importing Locust monkey-patches the interpreter with gevent."""

from __future__ import annotations

import json
import subprocess
import sys

from devstack.services import REPO

LOAD = """
from locust.util.load_locustfile import load_locustfile

print(sorted(load_locustfile("bench/locustfile.py")[0]))
"""

SUMMARIZE = """
import json
from locust.env import Environment
from bench.locustfile import summarize

stats = Environment().stats
for ms in [10] * 60 + [20] * 38 + [1000] * 2:  # 100 uploads: p50 10 ms, p99 1 s
    stats.log_request("POST", "/v1/jobs", ms, 10)
stats.log_request("GET", "/v1/jobs/[id]", 5, 10)
stats.log_error("GET", "/v1/jobs/[id]", "status answered 500")
stats.log_request("JOB", "8 documents to results (load-a)", 900, 8)
stats.log_request("REFUSED", "429 upload, retried after Retry-After", 3, 0)
print(json.dumps(summarize(stats)))
"""


def run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, check=True, capture_output=True, text=True
    )
    return done.stdout.strip().splitlines()[-1]


def test_locust_loads_the_locustfile_beside_bench_corpus() -> None:
    # Locust puts bench/ first on sys.path, where bench/corpus.py hides the corpus package.
    assert run(LOAD) == "['Client']"


def test_the_summary_keeps_endpoints_jobs_429s_and_failures_apart() -> None:
    summary = json.loads(run(SUMMARIZE))
    assert set(summary["endpoints"]) == {"POST /v1/jobs", "GET /v1/jobs/[id]"}
    upload = summary["endpoints"]["POST /v1/jobs"]
    assert (upload["requests"], upload["failures"]) == (100, 0)
    assert upload["p50_ms"] == 10 and upload["p99_ms"] == 1000
    assert summary["requests"] == 101 and summary["failures"] == 1
    assert set(summary["jobs"]) == {"8 documents to results (load-a)"}
    assert summary["job_failures"] == 0
    assert summary["uploads_refused_429"] == 1
