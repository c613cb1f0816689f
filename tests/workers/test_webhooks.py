"""workers.webhooks.deliver: one attempt per call against a real job store, with the receiver
replaced at the edge by an httpx.MockTransport (the real-receiver tests are end to end)."""

from __future__ import annotations

import dataclasses
import json
import random
import time
from collections.abc import Callable

import httpx
import pytest
from standardwebhooks import Webhook

from docq import keys
from docq.jobs import DeliveryState, EventType
from docq.store import Document, JobStore, WebhookTarget
from docq.webhook_guard import generate_secret
from workers.webhooks import DeliveryPolicy, deliver

PUBLIC_IP = "93.184.215.14"
SECRET = generate_secret()
POLICY = DeliveryPolicy(
    timeout_s=1.0,
    max_attempts=3,
    backoff_s=0.5,
    backoff_max_s=10.0,
    allow_private_networks=False,
    inline_results_max_bytes=0,
)


def resolve_public(host: str, port: int) -> list[str]:
    assert host == "hooks.example.com"
    return [PUBLIC_IP]


class Receiver:
    """Answers each request with the next scripted response (a status or an exception)."""

    def __init__(self, *script: int | Exception) -> None:
        self.script = list(script)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(step, Exception):
            raise step
        headers = {"location": "https://elsewhere.example.com/"} if 300 <= step < 400 else {}
        return httpx.Response(step, headers=headers, text="ok")


@pytest.fixture
def job_id(store: JobStore) -> str:
    target = WebhookTarget("https://hooks.example.com/docq?tenant=7", SECRET)
    job = store.create_job("doc-type", [Document("a", "text")], webhook=target)
    result = {"id": "a", "label": "invoice", "scores": {"invoice": 1.0}, "windows": 1}
    assert store.finish_shard(job.id, 0, [(0, result)]).performed
    return job.id


def attempt(
    store: JobStore,
    job_id: str,
    receiver: Receiver,
    *,
    token: str = "chain",
    policy: DeliveryPolicy = POLICY,
    resolve: Callable[[str, int], list[str]] = resolve_public,
):
    return deliver(
        store,
        policy,
        job_id,
        token,
        transport=httpx.MockTransport(receiver),
        resolve=resolve,
        rng=random.Random(1),
    )


def come_due(store: JobStore, job_id: str) -> None:
    """Bring the next attempt's time forward to now, as if its backoff had passed (the
    sweeper enqueues it then: workers/retries.py)."""
    store.r.hset(keys.webhook(job_id), "next_at", "0")


def test_a_2xx_delivers_a_verifiable_standard_webhook(store: JobStore, job_id: str) -> None:
    receiver = Receiver(204)
    outcome = attempt(store, job_id, receiver)
    assert (outcome.state, outcome.retry_in_s) == (DeliveryState.DELIVERED, None)

    (request,) = receiver.requests
    assert request.method == "POST"
    # connected to the address that was checked, with the URL's own Host
    assert request.url == httpx.URL(f"https://{PUBLIC_IP}/docq?tenant=7")
    assert request.headers["host"] == "hooks.example.com"
    assert request.extensions["sni_hostname"] == "hooks.example.com"
    body = Webhook(SECRET).verify(request.content, dict(request.headers))
    assert request.headers["webhook-id"] == f"msg_{job_id}"
    assert body["type"] == EventType.SUCCEEDED.value
    assert body["data"]["id"] == job_id
    assert body["data"]["status"] == "succeeded"
    assert body["data"]["progress"] == {"documents_done": 1, "documents_failed": 0}
    assert "results" not in body["data"]

    record = store.deliveries.get_webhook(job_id)
    assert record is not None and record.state is DeliveryState.DELIVERED
    (recorded,) = store.deliveries.webhook_attempts(job_id)
    assert (recorded.attempt, recorded.status_code, recorded.error) == (1, 204, None)
    assert recorded.duration_ms >= 0
    # nothing more to do for any copy of the task
    assert attempt(store, job_id, receiver).state is None
    assert len(receiver.requests) == 1


@pytest.mark.parametrize(
    "failure",
    [
        500,
        503,
        429,
        httpx.ReadTimeout("timed out"),
        httpx.ConnectTimeout("timed out"),
        httpx.ConnectError("[Errno 111] Connection refused"),
        httpx.RemoteProtocolError("server disconnected"),
    ],
)
def test_retryable_failures_back_off_then_dead_letter(
    store: JobStore, job_id: str, failure: int | Exception
) -> None:
    receiver = Receiver(failure)
    delays = []
    for n in range(1, POLICY.max_attempts):
        come_due(store, job_id)
        outcome = attempt(store, job_id, receiver)
        assert outcome.state is DeliveryState.PENDING
        assert outcome.retry_in_s is not None
        nominal = POLICY.backoff_s * 2 ** (n - 1)
        assert 0.75 * nominal <= outcome.retry_in_s <= 1.25 * nominal
        delays.append(outcome.retry_in_s)
    come_due(store, job_id)
    last = attempt(store, job_id, receiver)
    assert (last.state, last.retry_in_s) == (DeliveryState.DEAD_LETTERED, None)

    record = store.deliveries.get_webhook(job_id)
    assert record is not None and record.state is DeliveryState.DEAD_LETTERED
    assert record.dead_lettered_at is not None
    attempts = store.deliveries.webhook_attempts(job_id)
    assert [a.attempt for a in attempts] == [1, 2, 3]
    if isinstance(failure, int):
        assert {a.status_code for a in attempts} == {failure}
    else:
        assert {a.status_code for a in attempts} == {None}
        assert all(type(failure).__name__ in (a.error or "") for a in attempts)
    # every attempt: the same event, the same webhook-id, each freshly signed
    bodies = {r.content for r in receiver.requests}
    assert len(bodies) == 1
    assert {r.headers["webhook-id"] for r in receiver.requests} == {f"msg_{job_id}"}
    for r in receiver.requests:
        Webhook(SECRET).verify(r.content, dict(r.headers))
    assert attempt(store, job_id, receiver).state is None  # dead: no further attempt


@pytest.mark.parametrize("code", [400, 401, 404, 410, 422])
def test_other_4xx_are_final(store: JobStore, job_id: str, code: int) -> None:
    receiver = Receiver(code)
    outcome = attempt(store, job_id, receiver)
    assert (outcome.state, outcome.retry_in_s) == (DeliveryState.FAILED, None)
    assert len(receiver.requests) == 1
    (recorded,) = store.deliveries.webhook_attempts(job_id)
    assert (recorded.status_code, recorded.error) == (code, f"HTTP {code}")


def test_redirects_are_not_followed(store: JobStore, job_id: str) -> None:
    receiver = Receiver(302, 200)
    outcome = attempt(store, job_id, receiver)
    assert outcome.state is DeliveryState.FAILED
    assert [str(r.url.host) for r in receiver.requests] == [PUBLIC_IP]


def test_the_url_is_guarded_again_at_delivery(store: JobStore, job_id: str) -> None:
    receiver = Receiver(200)
    outcome = attempt(store, job_id, receiver, resolve=lambda host, port: ["10.0.0.7"])
    assert (outcome.state, outcome.retry_in_s) == (DeliveryState.FAILED, None)
    assert receiver.requests == []  # nothing was sent to the internal address
    (recorded,) = store.deliveries.webhook_attempts(job_id)
    assert recorded.status_code is None
    assert recorded.error is not None and "non-public" in recorded.error


def test_a_dns_failure_is_retried(store: JobStore, job_id: str) -> None:
    def no_dns(host: str, port: int) -> list[str]:
        raise OSError("Temporary failure in name resolution")

    receiver = Receiver(200)
    assert attempt(store, job_id, receiver, resolve=no_dns).state is DeliveryState.PENDING
    come_due(store, job_id)
    assert attempt(store, job_id, receiver).state is DeliveryState.DELIVERED
    assert [a.status_code for a in store.deliveries.webhook_attempts(job_id)] == [None, 200]


def test_a_stale_chain_sends_nothing(store: JobStore, job_id: str) -> None:
    receiver = Receiver(500)
    attempt(store, job_id, receiver, token="first")  # adopts the round
    outcome = attempt(store, job_id, receiver, token="duplicate")
    assert (outcome.state, outcome.retry_in_s) == (None, None)
    assert len(receiver.requests) == 1


def test_small_results_are_inlined_when_configured(store: JobStore, job_id: str) -> None:
    receiver = Receiver(200)
    policy = dataclasses.replace(POLICY, inline_results_max_bytes=10_000)
    attempt(store, job_id, receiver, policy=policy)
    body = json.loads(receiver.requests[0].content)
    assert [r["id"] for r in body["data"]["results"]] == ["a"]


def test_a_copy_that_comes_before_its_retry_is_due_sends_nothing(
    store: JobStore, job_id: str
) -> None:
    """A second message of the chain (a sweeper's, the audit's) right after a failed attempt
    must not bring the retry forward; the schedule holds the event until it is due."""
    receiver = Receiver(503, 200)
    failed = attempt(store, job_id, receiver)
    assert failed.state is DeliveryState.PENDING and failed.retry_in_s is not None
    early = attempt(store, job_id, receiver)
    assert early.state is None and "not due" in early.reason
    assert len(receiver.requests) == 1
    due_at = redis_score(store, job_id)
    assert due_at is not None and due_at > time.time()  # the sweeper enqueues it then
    come_due(store, job_id)
    assert attempt(store, job_id, receiver).state is DeliveryState.DELIVERED
    assert redis_score(store, job_id) is None  # settled: out of the schedule


def redis_score(store: JobStore, job_id: str) -> float | None:
    score = store.r.zscore(keys.webhooks_due(), job_id)
    return None if score is None else float(score)
