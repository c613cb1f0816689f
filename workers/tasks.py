"""Celery tasks: thin wrappers that load ids, call plain functions and record the outcome."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import Any

from celery import Task
from celery.signals import task_postrun, task_received
from celery.utils.time import get_exponential_backoff_interval

from docq import webhooks
from docq.config import Settings, get_settings
from docq.errors import DocqError, RetryableError, StoreUnavailable
from docq.extract import Limits
from docq.jobs import JobRecord
from docq.queue import DELIVER_WEBHOOK, EXTRACT_SHARD, PROCESS_SHARD, SHARD_TASKS, enqueue_shards
from workers import metrics
from workers.app import app, context, http, store
from workers.extraction import extract_shard as read_shard_files
from workers.objects import process_objects, read_part
from workers.results_out import write_back
from workers.shard import fail_shard, run_shard
from workers.sweeper import Lease, heartbeat
from workers.webhooks import DeliveryPolicy, deliver

log = logging.getLogger(__name__)


class ShardTask(Task):  # type: ignore[misc]
    """Gives up on a shard cleanly: its documents get an error and the job can finish."""

    def on_failure(
        self, exc: BaseException, task_id: str, args: Any, kwargs: Any, einfo: Any
    ) -> None:
        job_id, n = args[0], args[1]
        s = get_settings()
        reason = exc.message if isinstance(exc, DocqError) else "internal error"
        if isinstance(exc, RetryableError):
            reason = f"{reason} (gave up after retrying for {s.task_retry_budget_s:g} s)"
        log.error("job %s shard %d failed: %s", job_id, n, exc)
        # If this raises (Redis down), the shard's lease stays and expires: it is swept.
        fail_shard(
            context(), job_id, n, reason, keep_documents=s.keep_documents, on_final=finish_job
        )
        store().recovery.release(job_id, n)


def dispatch_event(job_id: str) -> None:
    """Enqueue the delivery of a job's event on the `webhooks` queue (once; see
    docq.webhooks.dispatch). A broker outage (QueueUnavailable) is retryable: the shard
    task runs again, finds the job final and dispatches then."""
    webhooks.dispatch(store(), app, job_id)


def finish_job(job_id: str) -> None:
    """What a job's end sets off: a manifest job's results written back to its `results`
    prefix (workers/results_out.py; a store failure retries the task), then its event."""
    s = get_settings()
    job = store().get_job(job_id)
    write_back(store(), process_objects(s), job, s.manifest_results_lines)
    dispatch_event(job_id)


def _part_reader(s: Settings, n: int) -> Callable[[JobRecord], bool]:
    """Reads part n of a manifest job from the object store (workers/objects.py)."""
    limits = Limits.from_settings(s)
    return lambda job: read_part(
        store(),
        process_objects(s),
        job,
        n,
        limits=limits,
        max_chars=s.max_document_chars,
        max_file_bytes=s.max_file_bytes,
        parallel=s.read_files_at_once,
    )


def retry_delay(s: Settings, failing_since: float, now: float, retries: int) -> int | None:
    """Seconds until the next attempt at a shard that has been failing since
    `failing_since` (exponential backoff with jitter, capped), or None once
    `task_retry_budget_s` is spent: the budget is time, so an outage of any length within it
    fails nothing, however many attempts it takes."""
    left = s.task_retry_budget_s - (now - failing_since)
    if left <= 0:
        return None
    delay = get_exponential_backoff_interval(
        s.task_retry_backoff_s, retries, s.task_retry_backoff_max_s, True
    )
    return max(1, min(delay, math.ceil(left)))  # the last attempt at the end of the budget


@task_received.connect
def _lease_on_receipt(request: Any, **_: Any) -> None:
    """Lease a shard the moment this worker receives its message, not only once a thread
    starts it: a message prefetched (or held for a retry's countdown) by a worker that is
    then killed is swept like a running one, instead of waiting for the visibility timeout.
    The heartbeat renews it while the message waits here."""
    if request.name not in SHARD_TASKS:
        return
    job_id, n = request.args[0], request.args[1]
    s = get_settings()
    try:
        store().recovery.hold(job_id, n, time.time() + s.shard_lease_s)
    except StoreUnavailable as exc:  # the visibility timeout stays the fallback
        log.warning("job %s shard %d: no lease on receipt: %s", job_id, n, exc.detail)
        return
    heartbeat(store(), s.shard_lease_s).add(job_id, n)


@task_postrun.connect
def _end_receipt_lease(task: Any, args: Any, **_: Any) -> None:
    """The message's run is over (done, given up, or retried by a new message): stop
    renewing for the receipt; the run itself released or extended the lease."""
    if task.name in SHARD_TASKS:
        heartbeat(store(), get_settings().shard_lease_s).remove(args[0], args[1])


def _leased(
    task: Task,
    job_id: str,
    shard: int,
    failing_since: float | None,
    run: Callable[[], object],
    *,
    release: bool = True,
) -> None:
    """Run a shard task's body holding the shard's lease (workers/sweeper.py), and release
    it after (`release`; else the body released it itself).

    Only what may heal (RetryableError: Triton, Redis or the broker unavailable) is retried,
    with exponential backoff and jitter, until `task_retry_budget_s` has passed since the
    first failure (`failing_since`, carried by the retries); bad input never is."""
    s = get_settings()
    lease = Lease(store(), job_id, shard, s.shard_lease_s)
    try:
        with lease:
            run()
    except RetryableError as exc:
        now = time.time()
        since = failing_since if failing_since is not None else now
        delay = retry_delay(s, since, now, task.request.retries)
        if delay is None:
            raise  # out of time: on_failure gives the shard's documents an error
        log.warning("job %s shard %d: %s; retrying in %ds", job_id, shard, exc.message, delay)
        lease.extend(delay)
        raise task.retry(exc=exc, countdown=delay, kwargs={"failing_since": since}) from exc
    if release:
        lease.release()


@app.task(name=PROCESS_SHARD, base=ShardTask, bind=True, max_retries=None)
def process_shard(self: Task, job_id: str, shard: int, failing_since: float | None = None) -> None:
    """Classify one shard of a job (the message carries ids, never documents)."""
    s = get_settings()
    read = _part_reader(s, shard)
    _leased(
        self,
        job_id,
        shard,
        failing_since,
        lambda: run_shard(
            context(),
            job_id,
            shard,
            keep_documents=s.keep_documents,
            on_final=finish_job,
            read_part=read,
        ),
    )


@app.task(name=EXTRACT_SHARD, base=ShardTask, bind=True, max_retries=None)
def extract_shard(self: Task, job_id: str, shard: int, failing_since: float | None = None) -> None:
    """Read the files of one shard into text (workers/extraction.py), then hand the shard
    to `process_shard` in its job's lane. The lease is released before the hand-off (the
    classifying worker takes its own on receipt; releasing after would drop that one): a
    crash in between leaves a shard with no lease, message or result, which the audits
    (workers/audit.py) enqueue again."""
    s = get_settings()
    limits = Limits.from_settings(s)

    def run() -> None:
        job = read_shard_files(
            store(),
            job_id,
            shard,
            limits=limits,
            parallel=s.read_files_at_once,
            read_part=lambda job, n: _part_reader(s, n)(job),
        )
        store().recovery.release(job_id, shard)
        if job is not None:  # a broker outage here retries: the next run only hands on
            enqueue_shards(app, job, [shard], lanes=s.bulk_lanes, extracted=True)

    _leased(self, job_id, shard, failing_since, run, release=False)


@app.task(name=DELIVER_WEBHOOK)  # never retried by Celery: attempts are counted in Redis
def deliver_webhook(job_id: str, token: str) -> None:
    """One attempt at delivering a job's event. A failed attempt records when the next is
    due, and the sweeper enqueues it then (workers/retries.py): the task never waits."""
    policy = DeliveryPolicy.from_settings(get_settings())
    try:
        outcome = deliver(store(), policy, job_id, token, client=http())
    except StoreUnavailable as exc:  # the schedule, or the audits, bring the event back
        log.warning("job %s: webhook delivery could not reach the job store: %s", job_id, exc)
        return
    if outcome.state is not None:  # an attempt was made
        metrics.WEBHOOK_ATTEMPTS.labels(outcome.state.value).inc()
