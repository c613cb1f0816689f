"""The job store's lifecycle writes against a real redis-server: the final transition is
reported once, the job's one event opens with it, cancel, retention, idempotency keys, and
the claim/finish protocol of delivery attempts."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from docq import keys
from docq.errors import NotFound
from docq.jobs import Attempt, DeliveryState, EventType, JobStatus
from docq.store import Document, IdempotencyClaim, JobStore, WebhookTarget
from tests.support.polling import until

HOOK = WebhookTarget("https://hooks.example.com/docq", "whsec_" + "QUFB" * 8)


def docs(n: int) -> list[Document]:
    return [Document(f"d{i}", f"text {i}") for i in range(n)]


def ok(index: int) -> tuple[int, dict]:
    return index, {"id": f"d{index}", "label": "invoice", "scores": {"invoice": 1.0}, "windows": 1}


def attempt(n: int, code: int | None = 500) -> Attempt:
    return Attempt(n, datetime.now(UTC), 1.5, code, None if code == 200 else "HTTP 500")


def test_only_the_write_that_finalizes_reports_it(store: JobStore) -> None:
    job = store.create_job("doc-type", docs(6), webhook=HOOK)
    first = store.finish_shard(job.id, 0, [ok(i) for i in range(4)])
    assert (first.status, first.performed) == (JobStatus.QUEUED, False)
    last = store.finish_shard(job.id, 1, [ok(4), ok(5)])
    assert (last.status, last.performed) == (JobStatus.SUCCEEDED, True)
    redelivered = store.finish_shard(job.id, 1, [ok(4), ok(5)])  # the last shard runs again
    assert (redelivered.status, redelivered.performed) == (JobStatus.SUCCEEDED, False)

    record = store.deliveries.get_webhook(job.id)
    assert record is not None
    assert (record.state, record.event) == (DeliveryState.PENDING, EventType.SUCCEEDED)
    assert record.webhook_id == f"msg_{job.id}"
    assert (record.round, record.round_attempts, record.token) == (1, 0, None)


def test_a_job_without_webhook_has_no_event(store: JobStore) -> None:
    job = store.create_job("doc-type", docs(2))
    assert store.finish_shard(job.id, 0, [ok(0), ok(1)]).performed
    assert store.deliveries.get_webhook(job.id) is None
    assert store.deliveries.dispatch_state(job.id) == (None, None)


def test_the_webhook_waits_while_the_job_runs(store: JobStore) -> None:
    job = store.create_job("doc-type", docs(6), webhook=HOOK)
    store.finish_shard(job.id, 0, [ok(i) for i in range(4)])
    record = store.deliveries.get_webhook(job.id)
    assert record is not None
    assert (record.state, record.event, record.url) == (DeliveryState.WAITING, None, HOOK.url)
    assert record.secret == HOOK.secret and not record.secret_generated


def test_an_all_failed_job_opens_job_failed(store: JobStore) -> None:
    job = store.create_job("doc-type", docs(1), webhook=HOOK)
    assert store.finish_shard(job.id, 0, [(0, {"id": "d0", "error": "x"})]).performed
    record = store.deliveries.get_webhook(job.id)
    assert record is not None and record.event is EventType.FAILED


def test_cancel_reports_the_transition_once_and_opens_job_cancelled(store: JobStore) -> None:
    job = store.create_job("doc-type", docs(6), webhook=HOOK)
    store.finish_shard(job.id, 0, [ok(i) for i in range(4)])
    first = store.request_cancel(job.id)
    assert (first.status, first.performed) == (JobStatus.CANCELLED, True)
    again = store.request_cancel(job.id)
    assert (again.status, again.performed) == (JobStatus.CANCELLED, False)
    # a shard that was in flight still lands, but never finalizes again
    late = store.finish_shard(job.id, 1, [ok(4), ok(5)])
    assert (late.status, late.performed) == (JobStatus.CANCELLED, False)
    record = store.deliveries.get_webhook(job.id)
    assert record is not None and record.event is EventType.CANCELLED
    with pytest.raises(NotFound):
        store.request_cancel("missing")


def test_a_finished_job_cannot_be_cancelled(store: JobStore) -> None:
    job = store.create_job("doc-type", docs(1), webhook=HOOK)
    store.finish_shard(job.id, 0, [ok(0)])
    assert store.request_cancel(job.id).performed is False
    record = store.deliveries.get_webhook(job.id)
    assert record is not None and record.event is EventType.SUCCEEDED


def test_documents_are_dropped_with_the_write_of_their_results(store: JobStore) -> None:
    job = store.create_job("doc-type", docs(6))
    store.finish_shard(job.id, 0, [ok(i) for i in range(4)], drop_documents=True)
    assert store.r.exists(keys.shard(job.id, 0)) == 0
    assert store.shard_completed(job.id, 0)
    with pytest.raises(NotFound):
        store.load_shard(job, 0)
    assert store.r.exists(keys.shard(job.id, 1)) == 1  # the open shard keeps its documents
    assert not store.shard_completed(job.id, 1)
    store.finish_shard(job.id, 1, [ok(4), ok(5)])  # keep_documents: they stay
    assert store.r.exists(keys.shard(job.id, 1)) == 1


def test_every_key_of_a_job_expires_with_it(redis_url: str) -> None:
    store = JobStore.from_url(redis_url, shard_size=4, ttl_s=1)
    job = store.create_job("doc-type", docs(6), webhook=HOOK)
    store.finish_shard(job.id, 0, [ok(i) for i in range(4)])
    job_pttl = store.r.pttl(keys.job(job.id))
    for key in (keys.results(job.id), keys.shards_done(job.id), keys.webhook(job.id)):
        assert 0 < store.r.pttl(key) <= job_pttl
    until(lambda: not store.r.exists(keys.job(job.id)), "the job to expire", 30)
    with pytest.raises(NotFound):
        store.get_job(job.id)
    assert store.r.keys(f"docq:job:{{{job.id}}}*") == []
    assert store.finish_shard(job.id, 1, [ok(4), ok(5)]).status is None  # nothing resurrected
    assert store.r.keys(f"docq:job:{{{job.id}}}*") == []


def test_idempotency_key_claims_are_exclusive_and_bind_to_the_job(store: JobStore) -> None:
    digest = f"test-{time.time_ns()}"
    mine = IdempotencyClaim(store.new_job_id(), "fp1", bound=False)
    other = IdempotencyClaim(store.new_job_id(), "fp2", bound=False)
    assert store.idempotency.claim(digest, mine) is None
    assert store.idempotency.claim(digest, other) == mine  # SET NX: the first one holds it
    job = store.create_job("doc-type", docs(1), job_id=mine.job_id)
    assert job.id == mine.job_id
    assert store.idempotency.bind(digest, mine)
    bound = store.idempotency.claim(digest, other)
    assert bound == IdempotencyClaim(mine.job_id, "fp1", bound=True)
    # the job's TTL first: read later, the key's can only be lower if both expire together
    job_ttl = store.r.pttl(keys.job(job.id))
    key_ttl = store.r.pttl(keys.idempotency(digest))
    assert 0 < key_ttl <= job_ttl  # the key expires with its job


def test_a_failed_upload_releases_only_its_own_claim(store: JobStore) -> None:
    digest = f"test-{time.time_ns()}"
    mine = IdempotencyClaim(store.new_job_id(), "fp1", bound=False)
    store.idempotency.claim(digest, mine)
    store.idempotency.release(digest, IdempotencyClaim("someone-else", "fp1", bound=False))
    assert store.idempotency.claim(digest, mine) == mine
    store.idempotency.release(digest, mine)
    assert store.idempotency.claim(digest, mine) is None


def finished_job(store: JobStore) -> str:
    job = store.create_job("doc-type", docs(1), webhook=HOOK)
    assert store.finish_shard(job.id, 0, [ok(0)]).performed
    return job.id


def test_a_delivery_chain_claims_attempts_one_at_a_time(store: JobStore) -> None:
    job_id = finished_job(store)
    assert store.deliveries.claim_attempt(job_id, "chain-a", 30) == ("claimed", 1.0)
    assert store.deliveries.claim_attempt(job_id, "chain-b", 30) == (
        "stale",
        0.0,
    )  # a duplicate enqueue
    outcome, left = store.deliveries.claim_attempt(
        job_id, "chain-a", 30
    )  # a twin of the same message
    assert outcome == "busy" and 0 < left <= 30
    assert store.deliveries.finish_attempt(job_id, "chain-a", attempt(1), DeliveryState.PENDING)
    assert store.deliveries.claim_attempt(job_id, "chain-a", 30) == ("claimed", 2.0)
    assert not store.deliveries.finish_attempt(
        job_id, "chain-b", attempt(2), DeliveryState.DELIVERED
    )
    assert store.deliveries.finish_attempt(
        job_id, "chain-a", attempt(2, 200), DeliveryState.DELIVERED
    )
    assert store.deliveries.claim_attempt(job_id, "chain-a", 30) == ("delivered", 0.0)

    record = store.deliveries.get_webhook(job_id)
    assert record is not None
    assert (record.state, record.round_attempts, record.delivered_at is not None) == (
        DeliveryState.DELIVERED,
        2,
        True,
    )
    assert [(a.attempt, a.status_code) for a in store.deliveries.webhook_attempts(job_id)] == [
        (1, 500),
        (2, 200),
    ]


def test_redelivery_opens_a_new_round_of_the_same_event(store: JobStore) -> None:
    job_id = finished_job(store)
    store.deliveries.claim_attempt(job_id, "a", 30)
    assert store.deliveries.restart_delivery(job_id) == (
        DeliveryState.PENDING,
        False,
    )  # mid-attempt
    store.deliveries.finish_attempt(job_id, "a", attempt(1), DeliveryState.DEAD_LETTERED)
    dead = store.deliveries.get_webhook(job_id)
    assert dead is not None and dead.dead_lettered_at is not None
    assert store.deliveries.restart_delivery(job_id) == (DeliveryState.DEAD_LETTERED, True)
    again = store.deliveries.get_webhook(job_id)
    assert again is not None
    assert (again.state, again.round, again.round_attempts, again.token) == (
        DeliveryState.PENDING,
        2,
        0,
        None,
    )
    assert again.webhook_id == dead.webhook_id
    assert again.dead_lettered_at is None
    assert store.deliveries.claim_attempt(job_id, "b", 30) == (
        "claimed",
        2.0,
    )  # numbering continues


def test_the_payload_is_frozen_at_the_first_attempt(store: JobStore) -> None:
    job_id = finished_job(store)
    assert store.deliveries.freeze_payload(job_id, '{"first":1}') == '{"first":1}'
    assert store.deliveries.freeze_payload(job_id, '{"second":2}') == '{"first":1}'


def test_redelivery_waits_for_a_scheduled_retry_but_takes_over_a_lost_chain(
    store: JobStore,
) -> None:
    job_id = finished_job(store)
    store.deliveries.claim_attempt(job_id, "a", 30)
    store.deliveries.finish_attempt(job_id, "a", attempt(1), DeliveryState.PENDING, retry_in_s=60)
    assert store.deliveries.restart_delivery(job_id) == (
        DeliveryState.PENDING,
        False,
    )  # retry is due later

    lost = finished_job(store)  # its delivery was never enqueued, or its message was lost
    store.deliveries.set_token_if_unset(lost, "lost-chain")
    assert store.deliveries.restart_delivery(lost) == (DeliveryState.PENDING, True)
    assert store.deliveries.dispatch_state(lost) == (
        DeliveryState.PENDING,
        None,
    )  # free for a new chain
    assert store.deliveries.claim_attempt(lost, "new-chain", 30) == ("claimed", 1.0)
    assert store.deliveries.claim_attempt(lost, "lost-chain", 30)[0] == "stale"
