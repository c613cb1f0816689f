"""Fairness across tenants: one tenant's big bulk job does not hold back another tenant's
bulk job. Each tenant's shards go to its own lane of the bulk queue, and a bulk worker
takes the lanes in turn (docq/queue.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from corpus.doc_type import generate
from devstack.services import celery_worker, redis_server
from docq.config import Settings
from docq.jobs import JobStatus
from docq.queue import bulk_lane
from tests.conftest import MODEL_REPOSITORY, settings_env, tenant_headers

pytestmark = pytest.mark.e2e

SHARD = 16  # documents per shard: B's 2 shards are more than the small-job lane takes (16)
BIG_SHARDS = 40
TEXT = 300  # characters per document
A, B = "tenant-a", "tenant-b"  # their names hash to different lanes (checked below)


@pytest.fixture
def stack(tmp_path: Path, triton_url: str) -> Iterator[tuple[TestClient, Settings]]:
    """The API and one bulk worker of concurrency 1 on a Redis of their own: no other
    worker of the session takes shards from these lanes."""
    from api.main import create_app

    with redis_server(tmp_path / "redis") as url:
        s = Settings(
            redis_url=url,
            triton_grpc_url=triton_url,
            model_repository=MODEL_REPOSITORY,
            shard_size=SHARD,
        )
        env = settings_env(s)
        with (
            celery_worker(env, tmp_path / "worker.log", "cpu", "fair", concurrency=1),
            TestClient(create_app(s)) as client,
        ):
            yield client, s


def submit(client: TestClient, documents: int, seed: int, headers: dict[str, str]) -> str:
    # Short texts (one short window each): what is measured is the order of the shards,
    # and on a shared 2-core box a full-length shard takes most of a minute.
    docs = [{"id": d.id, "text": d.text[:TEXT]} for d in generate(documents, seed=seed)]
    resp = client.post("/v1/jobs", json={"documents": docs}, headers=headers)
    assert resp.status_code == 202, resp.text
    return str(resp.json()["id"])


def job(client: TestClient, job_id: str, headers: dict[str, str]) -> dict[str, Any]:
    resp = client.get(f"/v1/jobs/{job_id}", headers=headers)
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


def wait_for(
    client: TestClient, job_id: str, headers: dict[str, str], done: Callable[[dict], bool]
) -> dict[str, Any]:
    """Poll the job until `done(job)`; the deadline is a guard, not what is tested."""
    deadline = time.monotonic() + 540
    while not done(now := job(client, job_id, headers)):
        assert time.monotonic() < deadline, f"job {job_id} stuck at {now}"
        time.sleep(0.1)
    return now


def test_a_tenants_bulk_job_does_not_wait_for_anothers_backlog(
    stack: tuple[TestClient, Settings],
) -> None:
    client, s = stack
    assert bulk_lane(A, s.bulk_lanes) != bulk_lane(B, s.bulk_lanes), "pick other tenants"
    a_key, b_key = tenant_headers(s, A), tenant_headers(s, B)
    big = submit(client, BIG_SHARDS * SHARD, seed=71, headers=a_key)
    wait_for(client, big, a_key, lambda j: j["status"] == "running")  # A's first shard is in

    small = submit(client, 2 * SHARD, seed=72, headers=b_key)
    assert s.small_job_max_documents < 2 * SHARD  # a bulk job, not the small-job lane's
    small_job = wait_for(client, small, b_key, lambda j: JobStatus(j["status"]).final)
    big_job = job(client, big, a_key)

    assert small_job["status"] == "succeeded"
    assert small_job["progress"]["documents_done"] == 2 * SHARD
    done = big_job["progress"]["documents_done"]
    # In turns, B's two shards wait for about one of A's each, not for A's 40.
    assert big_job["status"] == "running", "B's job waited for all of A's"
    assert done <= BIG_SHARDS * SHARD // 2, f"A had {done} documents done when B finished"
    # Cancelled, A's other shards are skipped, and the worker stops soon.
    assert client.delete(f"/v1/jobs/{big}", headers=a_key).status_code == 200
