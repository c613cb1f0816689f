"""Webhooks end to end: upload -> real Celery workers (cpu and webhooks) -> real tritonserver ->
a signed event at a real HTTP receiver on a free port, through receiver outages.

The session settings (tests/conftest.py) allow 127.0.0.1 receivers and make retries quick:
1 s per attempt, 5 attempts, backoff from 0.2 s capped at 1 s.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient
from standardwebhooks import Webhook

from corpus.doc_type import generate
from devstack.services import free_port
from docq import keys
from docq.config import Settings
from docq.store import JobStore
from tests.support.jobs import all_results, wait_until_final
from tests.support.receiver import HANG, Receiver

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("worker", "webhooks_worker")]

FINAL = {"delivered", "failed", "dead_lettered"}


def documents(n: int, seed: int = 11) -> list[dict[str, str]]:
    return [{"id": f"{i:04d}-{d.id}", "text": d.text} for i, d in enumerate(generate(n, seed=seed))]


def submit(api: TestClient, url: str, secret: str | None = None, n: int = 2) -> dict[str, Any]:
    webhook = {"url": url} if secret is None else {"url": url, "secret": secret}
    resp = api.post("/v1/jobs", json={"documents": documents(n), "webhook": webhook})
    assert resp.status_code == 202, resp.text
    return resp.json()  # type: ignore[no-any-return]


def wait_delivery(
    api: TestClient, job_id: str, states: set[str] = FINAL, timeout: float = 180
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        hook = api.get(f"/v1/jobs/{job_id}/webhook").json()
        if hook["state"] in states:
            return hook  # type: ignore[no-any-return]
        time.sleep(0.1)
    raise TimeoutError(f"webhook of job {job_id} still {hook}")


def verified(secret: str, received: Any) -> dict[str, Any]:
    return Webhook(secret).verify(received.body, received.headers)  # type: ignore[no-any-return]


def test_a_receiver_down_for_three_attempts_gets_one_verified_event(
    api: TestClient, settings: Settings, redis_url: str
) -> None:
    receiver = Receiver(503, 500, 429, 200)
    with receiver.serve() as url:
        created = submit(api, url)  # no secret: docq generates one and shows it once
        secret = created["webhook"]["secret"]
        assert secret.startswith("whsec_")
        hook = wait_delivery(api, created["id"])

    assert hook["state"] == "delivered"
    assert hook["event"] == "job.succeeded"
    assert hook["webhook_id"] == f"msg_{created['id']}"
    assert [a["status_code"] for a in hook["attempts"]] == [503, 500, 429, 200]
    assert [a["attempt"] for a in hook["attempts"]] == [1, 2, 3, 4]
    assert [a["error"] for a in hook["attempts"]] == ["HTTP 503", "HTTP 500", "HTTP 429", None]
    assert hook["delivered_at"] is not None

    # every attempt: the same event under the same webhook-id, each signature valid
    assert len(receiver.requests) == 4
    assert {r.headers["webhook-id"] for r in receiver.requests} == {hook["webhook_id"]}
    events = [verified(secret, r) for r in receiver.requests]
    assert all(e == events[0] for e in events)
    (accepted,) = receiver.accepted  # exactly one event was accepted
    event = verified(secret, accepted)
    job = api.get(f"/v1/jobs/{created['id']}").json()
    assert event["type"] == "job.succeeded"
    assert event["data"] == job  # the job status object, as GET shows it

    # the secret was shown once: never by GET, never stored anywhere the API shows
    for path in ("", "/webhook"):
        assert secret not in api.get(f"/v1/jobs/{created['id']}{path}").text
    # retention: the documents went as soon as their results were written
    r = redis.Redis.from_url(redis_url)
    assert r.keys(f"docq:job:{{{created['id']}}}:shard:*") == []
    assert [x["id"] for x in all_results(api, created["id"])] == [d["id"] for d in documents(2)]


def test_a_receiver_that_hangs_past_the_attempt_timeout_is_retried(api: TestClient) -> None:
    receiver = Receiver(HANG, 200)
    secret = "whsec_" + "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ="
    with receiver.serve() as url:
        created = submit(api, url, secret)
        assert created["webhook"] == {"url": url, "secret": None}  # the client's own: not echoed
        hook = wait_delivery(api, created["id"])
    assert hook["state"] == "delivered"
    first, second = hook["attempts"]
    assert first["status_code"] is None and "timeout" in first["error"]
    assert second["status_code"] == 200
    assert [r.answered for r in receiver.requests] == [None, 200]
    assert {r.headers["webhook-id"] for r in receiver.requests} == {hook["webhook_id"]}
    for r in receiver.requests:
        assert verified(secret, r)["type"] == "job.succeeded"


def test_refused_connections_dead_letter_and_redelivery_reaches_the_receiver_once_back(
    api: TestClient, settings: Settings
) -> None:
    port = free_port()  # nothing listens there: every attempt is refused
    created = submit(api, f"http://127.0.0.1:{port}/hooks/docq")
    secret = created["webhook"]["secret"]
    dead = wait_delivery(api, created["id"])
    assert dead["state"] == "dead_lettered"
    assert dead["dead_lettered_at"] is not None
    assert len(dead["attempts"]) == settings.webhook_max_attempts
    assert all(a["status_code"] is None for a in dead["attempts"])
    assert all("ConnectError" in a["error"] for a in dead["attempts"])

    receiver = Receiver(200)
    with receiver.serve(port) as url:  # the receiver is back
        assert url.endswith(f":{port}/hooks/docq")
        resp = api.post(f"/v1/jobs/{created['id']}/webhook/redeliver")
        assert resp.status_code == 202, resp.text
        assert resp.json()["state"] == "pending"
        hook = wait_delivery(api, created["id"])
        assert hook["state"] == "delivered"
        assert [a["attempt"] for a in hook["attempts"]] == list(range(1, 7))
        (accepted,) = receiver.requests
        assert accepted.headers["webhook-id"] == dead["webhook_id"]  # the same event
        assert verified(secret, accepted)["data"]["id"] == created["id"]

        # a delivered event can be sent again too: same id, so the receiver may de-duplicate
        assert api.post(f"/v1/jobs/{created['id']}/webhook/redeliver").status_code == 202
        again = wait_delivery(api, created["id"])
        assert again["state"] == "delivered"
        assert len(receiver.requests) == 2
        assert receiver.requests[1].body == accepted.body
        assert receiver.requests[1].headers["webhook-id"] == dead["webhook_id"]


def test_a_410_is_final_and_not_retried(api: TestClient) -> None:
    receiver = Receiver(410, 200)
    with receiver.serve() as url:
        created = submit(api, url)
        hook = wait_delivery(api, created["id"])
    assert hook["state"] == "failed"
    assert [(a["status_code"], a["error"]) for a in hook["attempts"]] == [(410, "HTTP 410")]
    assert [r.answered for r in receiver.requests] == [410]


def test_cancel_mid_job_fires_job_cancelled_once_and_keeps_finished_results(
    api: TestClient, redis_url: str, settings: Settings
) -> None:
    docs = documents(200, seed=3)
    shards = -(-len(docs) // settings.shard_size)
    receiver = Receiver(200)
    with receiver.serve() as url:
        resp = api.post("/v1/jobs", json={"documents": docs, "webhook": {"url": url}})
        created = resp.json()
        secret = created["webhook"]["secret"]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # wait for the first shard's results
            job = api.get(f"/v1/jobs/{created['id']}").json()
            if job["progress"]["documents_done"] > 0:
                break
            time.sleep(0.02)
        cancelled = api.delete(f"/v1/jobs/{created['id']}")
        assert cancelled.status_code == 200
        assert cancelled.json()["status"] == "cancelled"
        assert api.delete(f"/v1/jobs/{created['id']}").json()["status"] == "cancelled"

        # a barrier: the cpu worker takes a lane's shards in order, so once a later bulk job
        # of the same tenant (the same lane: one document more than a small job) is done,
        # every remaining shard of the cancelled one has been taken (and skipped)
        bulk = documents(settings.small_job_max_documents + 1, seed=4)
        later = api.post("/v1/jobs", json={"documents": bulk}).json()
        assert (
            not JobStore.from_url(redis_url, shard_size=8, ttl_s=60).get_job(later["id"]).priority
        )  # the bulk lane
        wait_until_final(api, later["id"])
        hook = wait_delivery(api, created["id"])

    job = api.get(f"/v1/jobs/{created['id']}").json()
    assert job["status"] == "cancelled"
    done = job["progress"]["documents_done"]
    assert 0 < done < len(docs)
    results = all_results(api, created["id"], limit=50)
    assert len(results) == done  # what was computed stays readable
    assert all("label" in r for r in results)
    by_id = {d["id"]: i for i, d in enumerate(docs)}
    assert [by_id[r["id"]] for r in results] == sorted(by_id[r["id"]] for r in results)
    r = redis.Redis.from_url(redis_url)
    assert r.hlen(keys.shards_done(created["id"])) < shards  # the rest were skipped

    assert hook["state"] == "delivered"
    assert hook["event"] == "job.cancelled"
    (request,) = receiver.requests  # once, though DELETE came twice and shards were skipped
    event = verified(secret, request)
    assert event["type"] == "job.cancelled"
    assert event["data"]["status"] == "cancelled"
    assert json.loads(request.body)["data"]["id"] == created["id"]
