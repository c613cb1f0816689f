"""The Celery app both sides share: the API enqueues through it, the workers consume it.

Delivery is at-least-once: a task is acknowledged only after it ran (acks_late), handed
back if its worker dies (reject_on_worker_lost), and redelivered by Redis after the
visibility timeout. Shard tasks are idempotent, so at-least-once runs give exactly-once
results. Messages carry ids, never documents.

Fairness across tenants: a bulk job's shards go to one of `bulk_lanes` queues, `cpu.0` ...
`cpu.{N-1}`, picked by a stable hash of its tenant (`bulk_lane`); a bulk worker started with
`-Q cpu` consumes `cpu` and every lane (workers/app.py adds them), and the Redis transport
takes turns among a worker's queues (see `configure`). With prefetch 1, a worker that
finishes a shard polls the other lanes before the one it just served, so another tenant's
shard waits for at most one shard of each busy lane per free thread, not for a 100,000-
document backlog. Two tenants whose names hash to the same lane share its FIFO (for two
tenants the chance is 1/N). Giving each tenant the least-used lane when its first key is
made would avoid that until there are more tenants than lanes, for a stored assignment that
every enqueue (the API's and the sweeper's) must read; a hash needs nothing stored. Small
jobs keep their own lane (PRIORITY_QUEUE), whichever tenant sends them.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from celery import Celery
from kombu.exceptions import BatchPublishError, OperationalError
from redis import RedisError

from docq import broker
from docq.config import Settings
from docq.errors import QueueUnavailable
from docq.jobs import JobRecord
from docq.store.sentinel import is_sentinel, parse

# Before any broker connection resolves kombu's transport names (docq/broker.py says why).
broker.install()

# Bulk jobs: the shards of each tenant's jobs in one of the lanes `cpu.0` ... (bulk_lane);
# `cpu` itself is what workers are started on, and the fallback route.
CPU_QUEUE = "cpu"
# Small jobs: consumed by a worker of their own, so they never queue behind a bulk job.
PRIORITY_QUEUE = "cpu-priority"
PROCESS_SHARD = "docq.process_shard"
# Shards of jobs with files are read (text extracted from PDFs, scans, DOCX, HTML) first, on
# a queue of their own with its own workers: a slow scan never holds up tokenizing, and
# extraction scales apart from classification. Each extract task hands its shard on to
# PROCESS_SHARD in the job's lane once its files are read.
EXTRACT_QUEUE = "extract"
EXTRACT_SHARD = "docq.extract_shard"
SHARD_TASKS = frozenset({PROCESS_SHARD, EXTRACT_SHARD})
# Webhook deliveries have their own queue (and workers), so a slow or dead receiver never
# holds up classification.
WEBHOOKS_QUEUE = "webhooks"
DELIVER_WEBHOOK = "docq.deliver_webhook"
# Shard messages sent in one Redis pipeline (kombu's publish batch): a round trip per
# this many, instead of one per shard. Larger holds more messages in the API's memory
# before the broker has them (each a few hundred bytes).
PUBLISH_BATCH = 1000


def make_celery(settings: Settings) -> Celery:
    """A Celery app configured for docq; creating it opens no connection."""
    app = Celery("docq")
    configure(app, settings)
    return app


def configure(app: Celery, settings: Settings) -> None:
    """docq's Celery configuration. The worker app calls it from `on_configure`, i.e. when
    its configuration is first read, after import: importing the app builds no settings."""
    app.conf.update(
        broker_url=settings.celery_broker_url,
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,  # results live in the job store, not in a Celery backend
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,  # a worker holds one shard at a time, others stay queued
        task_default_queue=CPU_QUEUE,
        task_routes={
            # enqueue_shards names the lane; a shard sent without one still reaches the bulk
            # workers, which consume `cpu` beside its lanes.
            PROCESS_SHARD: {"queue": CPU_QUEUE},
            EXTRACT_SHARD: {"queue": EXTRACT_QUEUE},
            DELIVER_WEBHOOK: {"queue": WEBHOOKS_QUEUE},
        },
        broker_transport_options={
            "visibility_timeout": settings.visibility_timeout_s,
            # What makes the lanes fair (kombu/transport/redis.py, Channel: `_brpop_start`
            # BRPOPs the queues in `_queue_cycle` order and `_brpop_read` calls
            # `_queue_cycle.rotate(queue)`, which moves the queue just served to the end;
            # kombu/utils/scheduling.py round_robin_cycle). It is kombu's default; `priority`
            # would poll in a fixed order and starve every lane after a busy one.
            "queue_order_strategy": "round_robin",
            **_sentinel_options(settings),
        },
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        worker_send_task_events=True,  # Flower shows tasks as they run
        task_send_sent_event=False,
    )


def _sentinel_options(settings: Settings) -> dict[str, Any]:
    """kombu's Sentinel transport options when the broker URL names Sentinels (its own
    `sentinel://...;sentinel://...` form): the master's name, the password for the
    Sentinels too (the URL's is the master's), and socket timeouts, so that a publish to a
    master whose host is gone fails (the API answers 503) instead of hanging. None for a
    plain redis:// broker, whose options stay kombu's defaults."""
    url = settings.celery_broker_url
    if not is_sentinel(url):
        return {}
    timeouts = {
        "socket_timeout": settings.redis_socket_timeout_s,
        "socket_connect_timeout": settings.redis_socket_timeout_s,
    }
    password = parse(url).password
    return {
        "master_name": settings.redis_sentinel_master,
        "sentinel_kwargs": {**timeouts, **({"password": password} if password else {})},
        **timeouts,
    }


@contextmanager
def _broker(what: str) -> Iterator[None]:
    """The one place a broker failure becomes QueueUnavailable (retryable)."""
    try:
        yield
    except (OperationalError, BatchPublishError, RedisError, OSError) as exc:
        raise QueueUnavailable(f"the broker did not take {what}", str(exc)) from exc


def bulk_lanes(lanes: int) -> list[str]:
    """The names of the tenant lanes of the bulk queue: `cpu.0` ... `cpu.{lanes-1}`."""
    return [f"{CPU_QUEUE}.{i}" for i in range(lanes)]


def bulk_lane(tenant: str, lanes: int) -> str:
    """The lane of a tenant's bulk jobs: a hash that every process computes alike (not
    Python's `hash`, which is salted per process)."""
    digest = hashlib.blake2b(tenant.encode(), digest_size=8).digest()
    return f"{CPU_QUEUE}.{int.from_bytes(digest, 'big') % lanes}"


def shard_queue(job: JobRecord, lanes: int) -> str:
    """The queue of a job's shards: the small-job lane, or its tenant's bulk lane."""
    return PRIORITY_QUEUE if job.priority else bulk_lane(job.tenant, lanes)


def consumed_queues(queues: Iterable[str], lanes: int) -> list[str]:
    """What a worker started on `queues` (its `-Q`) consumes: `cpu` brings its lanes."""
    out: list[str] = []
    for q in queues:
        out += [q, *bulk_lanes(lanes)] if q == CPU_QUEUE else [q]
    return out


def enqueue_shards(
    app: Celery,
    job: JobRecord,
    shards: Iterable[int] | None = None,
    *,
    lanes: int,
    extracted: bool = False,
) -> None:
    """One task per shard, by id: every shard of the job, or the ones named (the sweeper's).
    A job with files goes to EXTRACT_QUEUE first (an extract task whose shard was read
    already only passes it on, so the sweeper and the audits can always start there);
    `extracted` (the extract task's hand-off) or a job of text only: the job's own queue
    (shard_queue). `lanes`: the bulk_lanes setting. QueueUnavailable when the broker does
    not take them."""
    if job.files and not extracted:
        task, queue = EXTRACT_SHARD, EXTRACT_QUEUE
    else:
        task, queue = PROCESS_SHARD, shard_queue(job, lanes)
    numbers = range(job.shards) if shards is None else shards
    # One Redis pipeline (kombu's publish batch, flushed as the block ends) instead of one
    # LPUSH round trip per shard: a 20,000-document upload's 313 shards took 1.4 s one by
    # one on a busy 2-core box, most of its acceptance (docs/performance.md). A flush that fails
    # raises like a single publish: the upload removes its job (503).
    with (
        _broker(f"the shards of job {job.id}"),
        app.producer_or_acquire() as producer,
        producer.batch(max_size=PUBLISH_BATCH),
    ):
        for n in numbers:
            app.send_task(task, args=[job.id, n], queue=queue, producer=producer)


def enqueue_webhook(app: Celery, job_id: str, token: str) -> None:
    """The delivery of a job's event; `token` names the delivery chain (see docq.webhooks).
    QueueUnavailable when the broker does not take it."""
    with _broker(f"the webhook of job {job_id}"):
        app.send_task(DELIVER_WEBHOOK, args=[job_id, token], queue=WEBHOOKS_QUEUE)


def _args_of(message: dict[str, Any], tasks: Collection[str]) -> list[Any] | None:
    """The positional arguments of a message of one of `tasks` as kombu keeps it, or None."""
    if message.get("headers", {}).get("task") not in tasks:
        return None
    body = message.get("body", "")
    if message.get("properties", {}).get("body_encoding") == "base64":
        body = base64.b64decode(body)
    return json.loads(body)[0]  # type: ignore[no-any-return]  # protocol 2: [args, kwargs, embed]


def shard_of(message: dict[str, Any]) -> tuple[str, int] | None:
    """(job id, shard) of a shard message (process or extract) as kombu keeps it, or None."""
    args = _args_of(message, SHARD_TASKS)
    return None if args is None else (str(args[0]), int(args[1]))


def delivery_of(message: dict[str, Any]) -> tuple[str, str] | None:
    """(job id, chain token) of a deliver_webhook message as kombu keeps it, or None."""
    args = _args_of(message, (DELIVER_WEBHOOK,))
    return None if args is None else (str(args[0]), str(args[1]))
