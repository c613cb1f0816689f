"""`python -m bench.sizing redis`: a tiny run against a redis-server of its own, then that
server's append-only file read back: every job the load wrote is final and answered exactly
once, and the figures of the JSON agree with what Redis holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.sizing import main
from devstack.services import redis_server
from docq import keys
from docq.jobs import JobStatus
from docq.store import JobStore


def test_a_tiny_load_finishes_every_job_it_wrote_and_costs_redis_cpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, out = tmp_path / "redis", tmp_path / "load.json"
    # 1,024 documents a job: even one job (all a loaded machine may finish in 0.5 s) costs
    # redis-server tens of ms of CPU, and /proc counts it in 10 ms ticks (64: 0.0 s, once)
    tiny = ["--seconds", "0.5", "--clients", "1", "--docs-per-job", "1024"]
    tiny += ["--memory-jobs", "4", "--drain-s", "5"]  # a couple of seconds in all
    main(["redis", *tiny, "--data-dir", str(data), "--out", str(out)])
    s = json.loads(out.read_text())

    assert s["clients"] == 1 and len(s["samples"]) == 1 and "--memory-jobs 4" in s["command"]
    assert s["documents"] > 0 and s["incomplete_jobs"] == 0
    assert s["documents"] == s["jobs"] * s["docs_per_job"]
    assert s["docs_per_s"] == round(s["documents"] / s["wall_s"], 1)
    assert s["redis_cpu_s"] > 0 and s["redis_cpu_ms_per_doc"] > 0
    assert s["redis_saturation_docs_per_s"] == round(s["documents"] / s["redis_cpu_s"])
    assert s["memory"]["bytes_per_queued_document"] > 0
    assert s["memory"]["bytes_per_stored_result"] > 0
    assert s["jobs_written"] > s["jobs"]  # also the warm-up and the memory jobs
    assert "redis_saturation_docs_per_s" in capsys.readouterr().out  # the table printed

    with redis_server(data) as url:  # again, on the load's append-only file
        store = JobStore.from_url(url, shard_size=s["shard_size"], ttl_s=3600)
        records = list(store.r.scan_iter(match=keys.job("*")))
        assert len(records) == s["jobs_written"]
        for raw in records:
            job_id = raw.decode().split("{", 1)[1].rstrip("}")
            job = store.get_job(job_id)
            assert job.status is JobStatus.SUCCEEDED, job_id
            results = list(store.iter_results(job))
            assert len(results) == job.documents == s["docs_per_job"]
            assert all(len(r["scores"]) == 6 and r["label"] in r["scores"] for r in results)
            assert store.answers(job_id) == dict.fromkeys(range(job.documents), 1)
