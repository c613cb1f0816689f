"""The store's one translation of Redis errors: a Redis failure anywhere is StoreUnavailable
(retryable), so a blip at the end of a shard is retried, never turned into failed documents."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from devstack.services import redis_server
from docq.errors import RetryableError, StoreUnavailable
from docq.store import Document, IdempotencyClaim, JobStore


@pytest.fixture
def dead_store(tmp_path: Path) -> Iterator[tuple[JobStore, str]]:
    """A store with one job in it, whose Redis is then stopped."""
    with redis_server(tmp_path / "redis") as url:
        store = JobStore.from_url(url, shard_size=2, ttl_s=60)
        job = store.create_job("m", [Document("a", "x"), Document("b", "y")])
    yield store, job.id


CALLS: dict[str, Callable[[JobStore, str], Any]] = {
    "get_job": lambda s, j: s.get_job(j),
    "mark_running": lambda s, j: s.mark_running(j),
    "finish_shard": lambda s, j: s.finish_shard(j, 0, [(0, {"id": "a", "label": "x"})]),
    "shard_completed": lambda s, j: s.shard_completed(j, 0),
    "request_cancel": lambda s, j: s.request_cancel(j),
    "create_job": lambda s, j: s.create_job("m", [Document("c", "z")]),
    "delete_job": lambda s, j: s.delete_job(j, 1),
    "get_webhook": lambda s, j: s.deliveries.get_webhook(j),
    "claim_attempt": lambda s, j: s.deliveries.claim_attempt(j, "t", 1.0),
    "freeze_payload": lambda s, j: s.deliveries.freeze_payload(j, "{}"),
    "claim_key": lambda s, j: s.idempotency.claim("d", IdempotencyClaim(j, "fp", False)),
    "bind_key": lambda s, j: s.idempotency.bind("d", IdempotencyClaim(j, "fp", False)),
}


@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.faults
def test_every_store_call_raises_store_unavailable_when_redis_is_down(
    dead_store: tuple[JobStore, str], call: str
) -> None:
    store, job_id = dead_store
    with pytest.raises(StoreUnavailable) as err:
        CALLS[call](store, job_id)
    assert isinstance(err.value, RetryableError)  # the shard task retries it
    assert not store.ping()


@pytest.mark.faults
def test_scripts_flushed_from_redis_are_loaded_again(tmp_path: Path) -> None:
    """A script cache miss (Redis restarted) is redis-py's to heal, not an outage."""
    with redis_server(tmp_path / "redis") as url:
        store = JobStore.from_url(url, shard_size=2, ttl_s=60)
        job = store.create_job("m", [Document("a", "x")])
        store.r.script_flush()
        done = store.finish_shard(job.id, 0, [(0, {"id": "a", "label": "x"})])
        assert done.performed and done.status is not None
