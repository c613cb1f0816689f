"""Recovery of the work a dead process left behind: shard leases and the sweeper.

Why leases and not the broker: Redis as a Celery broker only redelivers an unacknowledged
task after the visibility timeout (an hour, sized for the slowest shard), and it cannot
tell a dead consumer from a slow one. A broker that redelivers when the consumer's
connection drops (RabbitMQ) would be a second service to run and secure. So each shard a
worker runs holds a lease in Redis that the worker renews every third of
`shard_lease_s`; a sweeper thread in every shard worker enqueues again the shards whose
lease expired, and the jobs whose record was written but whose shards were never enqueued
(the API died in between). Shard writes are idempotent (store/lua/complete_shard.lua), so a
shard that runs twice answers once.

The broker's side: kombu's Redis transport moves a message to its `unacked` hash when a
worker pops it, and the worker leases the shard when Celery receives the message
(workers/tasks.py), a few milliseconds later. A message whose worker died, before leasing
it or while running it, stays there until the visibility timeout (an hour); the sweeper
puts it back in its queue once it has sat unacknowledged for a whole lease with no live
lease (restore_unleased), so the shard comes back once, as its own message. A message lost
before it reached that hash is found by the audits of workers/audit.py, which the sweeper
thread runs too. It also enqueues the webhook deliveries that are due: retries, and attempts
whose worker died (workers/retries.py).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from types import TracebackType
from typing import Any

from celery import Celery
from celery.signals import worker_ready
from kombu.exceptions import OperationalError
from redis.exceptions import RedisError

from docq.config import get_settings
from docq.errors import DocqError, NotFound, QueueUnavailable, StoreUnavailable
from docq.queue import CPU_QUEUE, EXTRACT_QUEUE, PRIORITY_QUEUE, enqueue_shards, shard_of
from docq.store import JobStore, open_store
from workers.audit import audit
from workers.orphans import sweep_due
from workers.retries import enqueue_due

log = logging.getLogger(__name__)


# --- leases -------------------------------------------------------------------------


class Heartbeat:
    """Renews this process's shard leases: one thread, every third of the lease."""

    def __init__(self, store: JobStore, lease_s: float) -> None:
        self.store = store
        self.lease_s = lease_s
        self._held: dict[tuple[str, int], int] = {}  # shard -> holders in this process
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, job_id: str, n: int) -> None:
        with self._lock:
            self._held[(job_id, n)] = self._held.get((job_id, n), 0) + 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="lease-heartbeat")
                self._thread.daemon = True  # it holds nothing that must be flushed
                self._thread.start()

    def remove(self, job_id: str, n: int) -> None:
        with self._lock:
            left = self._held.pop((job_id, n), 1) - 1
            if left > 0:
                self._held[(job_id, n)] = left

    def _run(self) -> None:
        while True:
            time.sleep(self.lease_s / 3)
            with self._lock:
                shards = list(self._held)
            try:
                self.store.recovery.renew(shards, time.time() + self.lease_s)
            except StoreUnavailable as exc:  # the shard itself will notice and retry
                log.warning("could not renew %d shard leases: %s", len(shards), exc.detail)


_heartbeat: Heartbeat | None = None
_heartbeat_lock = threading.Lock()


def _forget_heartbeat() -> None:
    global _heartbeat, _heartbeat_lock
    _heartbeat, _heartbeat_lock = None, threading.Lock()  # a fork has no thread


os.register_at_fork(after_in_child=_forget_heartbeat)


def heartbeat(store: JobStore, lease_s: float) -> Heartbeat:
    """This process's heartbeat (created on first use)."""
    global _heartbeat
    with _heartbeat_lock:
        if _heartbeat is None:
            _heartbeat = Heartbeat(store, lease_s)
        return _heartbeat


class Lease:
    """The lease on one shard, held (and renewed) inside `with`; after it, the task says
    how it ended: `release()` (done with), or `extend(delay)` (a retry waits in this
    worker: if the worker dies meanwhile, the shard is swept after the delay and a lease)."""

    def __init__(self, store: JobStore, job_id: str, n: int, lease_s: float) -> None:
        self.store, self.job_id, self.n, self.lease_s = store, job_id, n, lease_s

    def __enter__(self) -> Lease:
        self.store.recovery.hold(self.job_id, self.n, time.time() + self.lease_s)
        heartbeat(self.store, self.lease_s).add(self.job_id, self.n)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        heartbeat(self.store, self.lease_s).remove(self.job_id, self.n)

    def release(self) -> None:
        self.store.recovery.release(self.job_id, self.n)

    def extend(self, delay_s: float) -> None:
        """Best effort: when Redis is what failed, the lease expires on its own a little
        sooner, and the sweeper enqueues the shard again (harmless)."""
        try:
            self.store.recovery.hold(self.job_id, self.n, time.time() + delay_s + self.lease_s)
        except StoreUnavailable as exc:
            log.warning("job %s shard %d: lease not extended: %s", self.job_id, self.n, exc)


# --- the sweeper --------------------------------------------------------------------


def sweep(store: JobStore, celery: Celery, *, lease_s: float, now: float, lanes: int) -> int:
    """Bring back every shard whose lease expired by `now` and every job written more than
    `lease_s` ago whose shards were never enqueued, each in the queue the API would have
    chosen (its tenant's lane; `lanes`: the bulk_lanes setting); returns how many shards it
    brought back. A shard whose message its dead worker still holds unacknowledged gets
    that message back (restore_unleased), so it is not queued twice; the others are
    enqueued again.

    Raises QueueUnavailable or StoreUnavailable; what it had claimed comes due again.
    """
    restored = restore_unleased(store, celery, popped_before=now - lease_s, now=now)
    enqueued = len(restored)
    for job_id, n, claim in store.recovery.claim_expired(now, lease_s):
        if (job_id, n) in restored:  # its own message went back to its queue
            store.recovery.drop_lease(job_id, n, claim)
            continue
        try:
            job = store.get_job(job_id)
        except NotFound:
            job = None
        if job is not None and not job.status.final and n not in store.completed_shards(job_id):
            log.warning(
                "job %s shard %d: its lease expired (worker lost); enqueued again", job_id, n
            )
            enqueue_shards(celery, job, [n], lanes=lanes)
            enqueued += 1
        store.recovery.drop_lease(job_id, n, claim)
    for job_id, claim in store.recovery.claim_unenqueued(now - lease_s, now):
        try:
            job = store.get_job(job_id)
        except NotFound:
            job = None
        if job is not None and not job.status.final:
            done = store.completed_shards(job_id)
            pending = [n for n in range(job.shards) if n not in done]
            log.warning(
                "job %s: written but never enqueued (its API process died?); enqueueing %d shards",
                job_id,
                len(pending),
            )
            enqueue_shards(celery, job, pending, lanes=lanes)
            enqueued += len(pending)
        store.recovery.drop_unenqueued(job_id, claim)
    return enqueued


def restore_unleased(
    store: JobStore, celery: Celery, *, popped_before: float, now: float
) -> set[tuple[str, int]]:
    """Put back in its queue every shard message that a worker popped before
    `popped_before` and that holds no live lease at `now` (its worker died before leasing
    it, or while running it), unless its shard is done; returns those shards. kombu's own
    restore moves each, atomically (two sweepers restore a message once)."""
    held = {shard for shard, until in store.recovery.held().items() if until > now}
    try:
        return _restore(store, celery, popped_before, held)
    except (OperationalError, RedisError, OSError) as exc:
        raise QueueUnavailable("the broker's unacknowledged messages", str(exc)) from exc


def _restore(
    store: JobStore, celery: Celery, popped_before: float, held: set[tuple[str, int]]
) -> set[tuple[str, int]]:
    restored: set[tuple[str, int]] = set()
    with celery.connection_for_write() as conn:
        channel: Any = conn.default_channel
        client = channel.client
        for tag in client.zrangebyscore(channel.unacked_index_key, "-inf", popped_before):
            raw = client.hget(channel.unacked_key, tag)
            shard = shard_of(json.loads(raw)[0]) if raw else None
            if shard is None or shard in held:
                continue
            job_id, n = shard
            try:
                job = store.get_job(job_id)
            except NotFound:
                continue  # expired or deleted: the visibility timeout may have it
            if job.status.final or n in store.completed_shards(job_id):
                continue
            log.warning(
                "job %s shard %d: its worker was lost holding its message (lease expired or "
                "never taken); the message is back in its queue",
                job_id,
                n,
            )
            channel.qos.restore_by_tag(tag, client)
            restored.add(shard)
    return restored


def _sweep_forever(celery: Celery, stop: threading.Event) -> None:
    s = get_settings()
    store = open_store(s)
    while not stop.wait(s.sweep_interval_s):
        try:
            sweep(store, celery, lease_s=s.shard_lease_s, now=time.time(), lanes=s.bulk_lanes)
            audit(store, celery, every_s=s.audit_interval_s, now=time.time(), lanes=s.bulk_lanes)
            enqueue_due(store, celery, now=time.time(), stall_s=s.webhook_stall_s)
        except (StoreUnavailable, QueueUnavailable) as exc:
            log.warning("sweep skipped: %s", exc.message)
        except DocqError as exc:
            log.error("sweep failed: %s (%s)", exc.message, exc.detail)
        except Exception:  # a sweeper that died would recover nothing: log it, go on
            log.exception("sweep failed")
        sweep_due(store, s, time.time())  # blobs no job refers to (workers/orphans.py)


@worker_ready.connect
def _start(sender: object = None, **_: object) -> None:
    """Every shard worker (classify or extract) sweeps (so recovery needs no process of
    its own); the webhooks worker does not."""
    app: Celery = sender.app  # type: ignore[attr-defined]
    queues = set(app.amqp.queues.consume_from or ())
    if not queues & {CPU_QUEUE, PRIORITY_QUEUE, EXTRACT_QUEUE}:
        return
    thread = threading.Thread(
        target=_sweep_forever, args=(app, threading.Event()), name="sweeper", daemon=True
    )
    thread.start()
    s = get_settings()
    log.info("sweeper started: every %ss, leases of %ss", s.sweep_interval_s, s.shard_lease_s)
