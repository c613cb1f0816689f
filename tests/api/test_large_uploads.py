"""A text upload of more than `accept_head_shards` shards (the session's settings: 2 shards
of 8 documents) is stored in two writes, its first shards enqueued between them, so that
workers start while the API stores the rest (api/submissions.py). The client still sees
one upload: a 202 once everything is stored and enqueued, or an error and nothing left.
The job store and the broker are real (Redis); no worker reads this broker.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from docq import keys
from docq.errors import StoreUnavailable
from docq.store import JobStore
from tests.api.conftest import queued
from tests.conftest import TENANT

DOCS = [{"id": f"d{i}", "text": f"INVOICE No. {i} Total due {i}.00 EUR"} for i in range(50)]


def shard_messages(broker: redis.Redis, lanes: int) -> list[list[Any]]:
    """The args of every shard message waiting, whichever lane it is on, sorted (the
    broker's lists hold them newest first)."""
    return sorted(args for msgs in queued(broker, lanes).values() for _, args in msgs)


@pytest.fixture
def lanes(api: TestClient) -> int:
    return int(api.app.state.resources.settings.bulk_lanes)


@pytest.fixture
def close_seen(
    api: TestClient, broker: redis.Redis, lanes: int, monkeypatch: pytest.MonkeyPatch
) -> Iterator[list[list[list[Any]]]]:
    """What was on the broker each time the API began the second write of a job."""
    seen: list[list[list[Any]]] = []
    close = JobStore.close_job

    def watched(self: JobStore, *args: Any, **kwargs: Any) -> None:
        seen.append(shard_messages(broker, lanes))
        close(self, *args, **kwargs)

    monkeypatch.setattr(JobStore, "close_job", watched)
    yield seen


def test_a_large_upload_s_first_shards_are_enqueued_before_the_rest_is_stored(
    api: TestClient, broker: redis.Redis, lanes: int, close_seen: list[list[list[Any]]]
) -> None:
    resp = api.post("/v1/jobs", json={"documents": DOCS}, headers={"idempotency-key": "big-1"})
    assert resp.status_code == 202, resp.text
    answer = resp.json()
    assert (answer["status"], answer["documents"]) == ("queued", 50)
    job_id = answer["id"]
    assert close_seen == [[[job_id, 0], [job_id, 1]]]  # the head, on the broker already
    assert shard_messages(broker, lanes) == [[job_id, n] for n in range(7)]

    store: JobStore = api.app.state.resources.store
    job = store.get_job(job_id, tenant=TENANT)
    texts = [d.text for n in range(job.shards) for d in store.load_shard(job, n)]
    assert texts == [d["text"] for d in DOCS]
    assert store.r.ttl(keys.shard(job_id, 0)) > 3600  # the retention, not the opening's
    assert store.r.sismember(keys.tenant_jobs(TENANT), job_id)
    assert store.r.zscore(keys.unenqueued(), job_id) is None  # enqueued: not the sweeper's
    assert store.r.zscore(keys.active(), job_id) is not None
    assert api.get(f"/v1/jobs/{job_id}").json()["documents"] == 50
    replay = api.post("/v1/jobs", json={"documents": DOCS}, headers={"idempotency-key": "big-1"})
    assert (replay.status_code, replay.json()["id"]) == (200, job_id)


def test_uploads_within_the_head_are_stored_in_one_write(
    api: TestClient, broker: redis.Redis, lanes: int, close_seen: list[list[list[Any]]]
) -> None:
    resp = api.post("/v1/jobs", json={"documents": DOCS[:16]})  # 2 shards: the head itself
    assert resp.status_code == 202, resp.text
    assert close_seen == []
    assert shard_messages(broker, lanes) == [[resp.json()["id"], n] for n in range(2)]


def test_a_large_upload_whose_rest_cannot_be_stored_gets_503_and_leaves_nothing(
    api: TestClient, broker: redis.Redis, lanes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    store: JobStore = api.app.state.resources.store
    opened: list[str] = []
    open_job = JobStore.open_job

    def opening(self: JobStore, *args: Any, **kwargs: Any) -> Any:
        job = open_job(self, *args, **kwargs)
        opened.append(job.id)
        return job

    def refused(self: JobStore, *args: Any, **kwargs: Any) -> None:
        raise StoreUnavailable("the job store went away")

    monkeypatch.setattr(JobStore, "open_job", opening)
    monkeypatch.setattr(JobStore, "close_job", refused)
    key = {"idempotency-key": "big-2"}
    resp = api.post("/v1/jobs", json={"documents": DOCS}, headers=key)
    assert resp.status_code == 503, resp.text
    assert resp.json()["error"]["code"] == "store_unavailable"
    [job_id] = opened
    assert not store.r.keys(f"*{job_id}*")  # record, shards: none is left
    assert not store.r.sismember(keys.tenant_jobs(TENANT), job_id)
    # the head's messages went out before the failure: a worker finds the job gone (skips)
    assert shard_messages(broker, lanes) == [[job_id, 0], [job_id, 1]]

    monkeypatch.undo()  # the store is back: the same upload, same key, is a new job
    again = api.post("/v1/jobs", json={"documents": DOCS}, headers=key)
    assert again.status_code == 202, again.text
    assert again.json()["id"] != job_id
