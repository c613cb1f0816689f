"""Celery tasks: thin wrappers that load ids, call plain functions and record the outcome."""

from __future__ import annotations

import logging
from typing import Any

from celery import Task

from docq.config import get_settings
from docq.errors import DocqError, RetryableError
from docq.queue import PROCESS_SHARD
from workers.app import app, context
from workers.shard import fail_shard, run_shard

log = logging.getLogger(__name__)
_settings = get_settings()


class ShardTask(Task):  # type: ignore[misc]
    """Gives up on a shard cleanly: its documents get an error and the job can finish."""

    def on_failure(
        self, exc: BaseException, task_id: str, args: Any, kwargs: Any, einfo: Any
    ) -> None:
        job_id, n = args[0], args[1]
        reason = exc.message if isinstance(exc, DocqError) else "internal error"
        if isinstance(exc, RetryableError):
            reason = f"{reason} (gave up after {self.request.retries + 1} attempts)"
        log.error("job %s shard %d failed: %s", job_id, n, exc)
        fail_shard(context(), job_id, n, reason)


@app.task(
    name=PROCESS_SHARD,
    base=ShardTask,
    autoretry_for=(RetryableError,),  # only what may heal is retried; bad input never is
    max_retries=_settings.task_max_retries,
    retry_backoff=_settings.task_retry_backoff_s,
    retry_backoff_max=_settings.task_retry_backoff_max_s,
    retry_jitter=True,
)
def process_shard(job_id: str, shard: int) -> None:
    """Classify one shard of a job (the message carries ids, never documents)."""
    run_shard(context(), job_id, shard)
