"""A worker whose consumer stopped reading while its queues wait makes it read again.

Why: Celery's consumer on a Redis broker can come back from a lost connection and never
read again: the process answers, holds no task, and the queues it serves keep their
messages until it is restarted by hand (celery/celery#8030, #9054, #10205, #10302, the last
on Celery 5.6). kombu's Redis transport stops polling a channel's BRPOP while the channel's
QoS has no credit left (kombu/transport/redis.py, `_update_brpop_polling`), so one credit
never given back stops it for good. A Redis crash in clean-clone CI left a shard worker so
for ten minutes (tests/faults/test_faults_redis.py), 64 of 600 documents done. Nothing the
sweeper reads is wrong then: the shards wait in their queue, so neither the leases nor the
audits (workers/sweeper.py, workers/audit.py) can move them; the consumer must read again.

The consumer can also be lost for good: an error Celery does not recover from stops it,
and a warm shutdown that waits on a task that never ends leaves the process alive and
silent, with no task consumer to read its queues' lengths from. (kombu's AttributeError
after a Sentinel failover did that, issue 41; docq/broker.py makes it a lost connection.)

So a thread in every worker looks, every quarter of `worker_stall_s`, at what the worker
holds and at what waits in the queues it consumes (the task consumer's, a queue cancelled
by an operator not watched; the worker's own `-Q` while it has no task consumer). A worker
with room for another task (it holds fewer than its prefetch limit: a stuck task does not
make it busy) while messages wait, that has received none for `worker_stall_s`, is stalled.
The remedy is Celery's own: an error of the broker connection raised in the consumer's event
loop, which Celery answers as it answers a lost connection: it closes the connection,
connects again, builds a fresh channel (a fresh QoS) and consumes again. A worker still
stalled as long again shuts down (SIGTERM, warm) for its supervisor to start it afresh: the
Deployment, compose's restart policy; and if it is still there as long again (its shutdown
waits on a task that never ends), it exits at once (its shards' leases expire and the
sweeper enqueues them again). While the broker cannot be read, nothing is decided.
"""

from __future__ import annotations

import enum
import logging
import os
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any

from celery.signals import task_received, worker_ready
from celery.worker import state
from kombu.exceptions import OperationalError
from redis.exceptions import RedisError

from docq.config import get_settings

log = logging.getLogger(__name__)


class Remedy(enum.Enum):
    NONE = "none"
    RECONNECT = "reconnect"
    SHUT_DOWN = "shut down"
    EXIT = "exit"  # the shutdown did not end the process


@dataclass
class Watch:
    """When a worker is stalled, and what to do: fed what it holds, what waits in its
    queues, and when it last received a task."""

    stall_s: float
    since: float | None = None  # when this stretch of idling beside waiting messages began
    remedies: int = 0  # applied in this stretch

    def check(
        self, now: float, *, waiting: int, held: int, received_at: float, room: int = 1
    ) -> Remedy:
        """`room`: how many tasks the worker may hold (its prefetch limit; 0: no limit)."""
        if waiting == 0 or (room and held >= room):
            self.since, self.remedies = None, 0  # nothing to take, or busy: not stalled
            return Remedy.NONE
        if self.since is None or received_at > self.since:
            self.since, self.remedies = now, 0  # idle from now, or it received one since
            return Remedy.NONE
        if now - self.since < self.stall_s * (self.remedies + 1):
            return Remedy.NONE
        self.remedies += 1
        return (Remedy.RECONNECT, Remedy.SHUT_DOWN, Remedy.EXIT)[min(self.remedies, 3) - 1]


class ConsumerStalled(ConnectionError):
    """Raised in the consumer's event loop: Celery reconnects as after a lost connection."""


_received_at = time.monotonic()


@task_received.connect
def _received(**_: object) -> None:
    global _received_at
    _received_at = time.monotonic()


def waiting(consumer: Any) -> int:
    """Messages waiting in the queues the consumer reads now (every priority level): its task
    consumer's, or while it has none (between connections, or lost), the worker's own."""
    task_consumer = getattr(consumer, "task_consumer", None)
    if task_consumer is not None:
        queues = [q.name for q in task_consumer.queues]
    else:
        queues = list(consumer.app.amqp.queues.consume_from or ())
    with consumer.app.connection_for_write() as conn:
        channel: Any = conn.default_channel
        pipe = channel.client.pipeline(transaction=False)
        for queue in queues:
            for pri in channel.priority_steps:
                pipe.llen(channel._q_for_pri(queue, pri))
        return sum(pipe.execute())


def reconnect(consumer: Any, why: str) -> None:
    """Celery's reconnection, from the consumer's own event loop."""

    def _raise() -> None:
        raise ConsumerStalled(why)

    consumer.hub.call_soon(_raise)


def _guard(consumer: Any, watch: Watch) -> None:
    while True:
        time.sleep(watch.stall_s / 4)
        try:
            queued = waiting(consumer)
        except (OperationalError, RedisError, OSError) as exc:
            log.debug("stall check skipped: broker unavailable (%s)", exc)
            continue
        except Exception:  # the guard must outlive whatever one look ran into
            log.warning("stall check failed", exc_info=True)
            continue
        if watch.remedies < 2 and (state.should_stop is not None or state.should_terminate):
            continue  # a shutdown someone asked for (not this guard): let it take its time
        held = len(state.reserved_requests)
        remedy = watch.check(
            time.monotonic(),
            waiting=queued,
            held=held,
            received_at=_received_at,
            room=room(consumer),
        )
        why = (
            f"the consumer holds {held} task(s), has room for more and received none for "
            f"{watch.stall_s:g}s while {queued} messages wait in its queues"
        )
        if remedy is Remedy.RECONNECT:
            log.error("%s: reconnecting to the broker", why)
            reconnect(consumer, why)
        elif remedy is Remedy.SHUT_DOWN:
            log.critical("%s, after a reconnection too: shutting down to be restarted", why)
            os.kill(os.getpid(), signal.SIGTERM)
        elif remedy is Remedy.EXIT:
            log.critical("%s, and its shutdown did not end it: exiting now", why)
            logging.shutdown()
            os._exit(EXIT_STALLED)


# The exit status of a worker the guard ended itself (EX_SOFTWARE): its supervisor restarts it.
EXIT_STALLED = 70


def room(consumer: Any) -> int:
    """How many tasks the consumer may hold at once (0: no limit): its prefetch limit, at
    most its configured one. Celery raises the limit by one for each task it holds for a
    later time (a retry's countdown), which `state.reserved_requests` does not list: those
    must not count as room."""
    qos = getattr(consumer, "qos", None)
    if qos is None:
        return 1
    limits = [int(qos.value), int(getattr(consumer, "initial_prefetch_count", 0) or 0)]
    return min((n for n in limits if n), default=0)


@worker_ready.connect
def _start(sender: Any = None, **_: object) -> None:
    """Every worker watches its consumer, unless worker_stall_s is 0. `sender`: the
    consumer (celery/worker/consumer/consumer.py, on_ready)."""
    stall_s = get_settings().worker_stall_s
    if not stall_s or getattr(sender, "hub", None) is None:
        return  # off, or no event loop to reconnect from (a worker without one)
    watch = Watch(stall_s)
    threading.Thread(target=_guard, args=(sender, watch), name="stall-guard", daemon=True).start()
    log.info("stall guard started: idle for %ss beside waiting messages, it reconnects", stall_s)
