"""A crash of a worker process in the middle of a shard loses nothing and answers nothing twice."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from conversion.corpus import generate
from tests.test_e2e import all_results, wait_until_final

pytestmark = pytest.mark.integration


def children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def test_killed_worker_child_mid_shard_loses_no_document(
    api: TestClient, worker: subprocess.Popen, redis_url: str
) -> None:
    docs = [{"id": d.id, "text": d.text} for d in generate(40, seed=31)]
    created = api.post("/v1/jobs", json={"documents": docs}).json()
    # wait until the worker is inside the job (some progress, not all), then kill its child
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        job = api.get(f"/v1/jobs/{created['id']}").json()
        if job["status"] == "running":
            break
        time.sleep(0.05)
    assert job["status"] == "running"
    (child,) = children(worker.pid)
    os.kill(child, signal.SIGKILL)

    job, _ = wait_until_final(api, created["id"], timeout=300)
    assert job["status"] == "succeeded"
    assert job["progress"] == {"documents_done": 40, "documents_failed": 0}
    results = all_results(api, created["id"], limit=50)
    assert [r["id"] for r in results] == [d["id"] for d in docs]  # each once, in order
    assert worker.poll() is None  # the worker itself survived and replaced its child
    assert children(worker.pid) and children(worker.pid) != [child]
