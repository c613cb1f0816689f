"""The Celery app both sides share: the API enqueues through it, the workers consume it.

Delivery is at-least-once: a task is acknowledged only after it ran (acks_late), handed
back if its worker dies (reject_on_worker_lost), and redelivered by Redis after the
visibility timeout. Shard tasks are idempotent, so at-least-once runs give exactly-once
results. Messages carry ids, never documents.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from celery import Celery
from kombu.exceptions import OperationalError
from redis import RedisError

from docq.config import Settings
from docq.errors import QueueUnavailable

CPU_QUEUE = "cpu"
# Small jobs: consumed by a worker of their own, so they never queue behind a bulk job.
PRIORITY_QUEUE = "cpu-priority"
PROCESS_SHARD = "docq.process_shard"
# Webhook deliveries have their own queue (and workers), so a slow or dead receiver never
# holds up classification.
WEBHOOKS_QUEUE = "webhooks"
DELIVER_WEBHOOK = "docq.deliver_webhook"


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
            PROCESS_SHARD: {"queue": CPU_QUEUE},
            DELIVER_WEBHOOK: {"queue": WEBHOOKS_QUEUE},
        },
        broker_transport_options={"visibility_timeout": settings.visibility_timeout_s},
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        worker_send_task_events=True,  # Flower shows tasks as they run
        task_send_sent_event=False,
    )


@contextmanager
def _broker(what: str) -> Iterator[None]:
    """The one place a broker failure becomes QueueUnavailable (retryable)."""
    try:
        yield
    except (OperationalError, RedisError, OSError) as exc:
        raise QueueUnavailable(f"the broker did not take {what}", str(exc)) from exc


def enqueue_shards(
    app: Celery, job_id: str, shards: int | Iterable[int], *, priority: bool = False
) -> None:
    """One task per shard, by id: every shard of the job (a count), or the ones named (the
    sweeper's); small jobs go to the priority lane's own queue. QueueUnavailable when the
    broker does not take them."""
    queue = PRIORITY_QUEUE if priority else CPU_QUEUE
    numbers = range(shards) if isinstance(shards, int) else shards
    with _broker(f"the shards of job {job_id}"), app.producer_or_acquire() as producer:
        for n in numbers:
            app.send_task(PROCESS_SHARD, args=[job_id, n], queue=queue, producer=producer)


def enqueue_webhook(app: Celery, job_id: str, token: str) -> None:
    """The delivery of a job's event; `token` names the delivery chain (see docq.webhooks).
    QueueUnavailable when the broker does not take it."""
    with _broker(f"the webhook of job {job_id}"):
        app.send_task(DELIVER_WEBHOOK, args=[job_id, token], queue=WEBHOOKS_QUEUE)
