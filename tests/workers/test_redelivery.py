"""workers.redelivery: a webhook message held unacknowledged by a dead webhooks worker goes
back to its queue once its attempt is overdue, and only then, against a real redis-server
that is the broker and the job store (no worker consumes it)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from celery import Celery

from devstack.services import redis_server
from docq import keys
from docq.config import Settings
from docq.queue import WEBHOOKS_QUEUE, delivery_of, enqueue_webhook, make_celery
from docq.store import JobStore
from workers.redelivery import restore_stalled

STALL_S = 30.0


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    with redis_server(tmp_path / "redis") as url:  # its own: the unacked hash is global
        yield url


def held_by_a_dead_worker(url: str, job_id: str, token: str) -> None:
    """Enqueue the delivery, and take it as a worker does (into kombu's unacked hash), then
    exit with neither ack nor restore, as a SIGKILL leaves it."""
    enqueue_webhook(make_celery(Settings(redis_url=url)), job_id, token)
    code = (
        "import os\n"
        "from kombu import Connection\n"
        f"with Connection({url!r}) as conn:\n"
        f"    assert conn.default_channel.basic_get({WEBHOOKS_QUEUE!r}, no_ack=False)\n"
        "    os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def delivery(r: redis.Redis, job_id: str, **fields: str) -> None:
    r.hset(keys.webhook(job_id), mapping={"state": "pending", **fields})


def test_a_held_retry_goes_back_once_its_attempt_is_overdue_and_only_then(url: str) -> None:
    r = redis.Redis.from_url(url)
    store = JobStore.from_url(url, shard_size=4, ttl_s=3600)
    celery: Celery = make_celery(Settings(redis_url=url))
    held_by_a_dead_worker(url, "j1", "chain-1")
    now = time.time() + STALL_S + 1  # the message was taken more than a stall ago
    due = now - STALL_S + 5  # its retry is due, but not yet a stall overdue
    delivery(r, "j1", token="chain-1", next_at=repr(due))
    assert restore_stalled(store, celery, stall_s=STALL_S, now=now) == 0
    assert r.llen(WEBHOOKS_QUEUE) == 0 and r.hlen("unacked") == 1

    later = due + STALL_S
    r.hset(keys.webhook("j1"), "busy_until", repr(later + 1))  # an attempt is running
    assert restore_stalled(store, celery, stall_s=STALL_S, now=later) == 0
    r.hdel(keys.webhook("j1"), "busy_until")  # ...or was, by a worker now dead
    assert restore_stalled(store, celery, stall_s=STALL_S, now=later) == 1
    assert r.llen(WEBHOOKS_QUEUE) == 1 and r.hlen("unacked") == 0
    assert delivery_of(json.loads(r.lindex(WEBHOOKS_QUEUE, 0) or "{}")) == ("j1", "chain-1")
    assert restore_stalled(store, celery, stall_s=STALL_S, now=later) == 0  # once


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"state": "delivered", "token": "chain-1"}, "nothing left to send"),
        ({"token": "chain-2"}, "another chain owns the round: this one is stale"),
    ],
)
def test_a_held_message_with_nothing_to_send_stays_for_the_visibility_timeout(
    url: str, fields: dict[str, str], why: str
) -> None:
    r = redis.Redis.from_url(url)
    store = JobStore.from_url(url, shard_size=4, ttl_s=3600)
    held_by_a_dead_worker(url, "j1", "chain-1")
    delivery(r, "j1", **fields)
    later = time.time() + 10 * STALL_S
    restored = restore_stalled(
        store, make_celery(Settings(redis_url=url)), stall_s=STALL_S, now=later
    )
    assert restored == 0, why
    assert r.hlen("unacked") == 1
