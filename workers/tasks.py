"""Celery tasks: thin wrappers that load ids, call plain functions and record the outcome."""

from __future__ import annotations

import logging
import math
import time
from typing import Any

from celery import Task
from celery.signals import task_postrun, task_received
from celery.utils.time import get_exponential_backoff_interval

from docq import webhooks
from docq.config import Settings, get_settings
from docq.errors import DocqError, RetryableError, StoreUnavailable
from docq.queue import DELIVER_WEBHOOK, PROCESS_SHARD
from workers import metrics
from workers.app import app, context, store
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
            context(), job_id, n, reason, keep_documents=s.keep_documents, on_final=dispatch_event
        )
        store().recovery.release(job_id, n)


def dispatch_event(job_id: str) -> None:
    """Enqueue the delivery of a job's event on the `webhooks` queue (once; see
    docq.webhooks.dispatch). A broker outage (QueueUnavailable) is retryable: the shard
    task runs again, finds the job final and dispatches then."""
    webhooks.dispatch(store(), app, job_id)


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
    if request.name != PROCESS_SHARD:
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
    if task.name == PROCESS_SHARD:
        heartbeat(store(), get_settings().shard_lease_s).remove(args[0], args[1])


@app.task(name=PROCESS_SHARD, base=ShardTask, bind=True, max_retries=None)
def process_shard(self: Task, job_id: str, shard: int, failing_since: float | None = None) -> None:
    """Classify one shard of a job (the message carries ids, never documents), holding
    its lease while it runs (workers/sweeper.py).

    Only what may heal (RetryableError: Triton, Redis or the broker unavailable) is retried,
    with exponential backoff and jitter, until `task_retry_budget_s` has passed since the
    first failure (`failing_since`, carried by the retries); bad input never is."""
    s = get_settings()
    lease = Lease(store(), job_id, shard, s.shard_lease_s)
    try:
        with lease:
            run_shard(
                context(), job_id, shard, keep_documents=s.keep_documents, on_final=dispatch_event
            )
    except RetryableError as exc:
        now = time.time()
        since = failing_since if failing_since is not None else now
        delay = retry_delay(s, since, now, self.request.retries)
        if delay is None:
            raise  # out of time: on_failure gives the shard's documents an error
        log.warning("job %s shard %d: %s; retrying in %ds", job_id, shard, exc.message, delay)
        lease.extend(delay)
        raise self.retry(exc=exc, countdown=delay, kwargs={"failing_since": since}) from exc
    lease.release()


@app.task(name=DELIVER_WEBHOOK, bind=True, max_retries=None)  # attempts are counted in Redis
def deliver_webhook(self: Task, job_id: str, token: str) -> None:
    """One attempt at delivering a job's event; failed attempts come back through Celery's
    retry after the policy's backoff, until delivered, refused or dead-lettered."""
    policy = DeliveryPolicy.from_settings(get_settings())
    try:
        outcome = deliver(store(), policy, job_id, token)
    except StoreUnavailable as exc:  # the job store may heal; try again
        log.warning("job %s: webhook delivery could not reach the job store: %s", job_id, exc)
        raise self.retry(countdown=policy.backoff_s) from exc
    if outcome.state is not None:  # an attempt was made
        metrics.WEBHOOK_ATTEMPTS.labels(outcome.state.value).inc()
    if outcome.retry_in_s is not None:
        raise self.retry(countdown=outcome.retry_in_s)
