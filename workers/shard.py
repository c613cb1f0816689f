"""Process one shard of a job: the body of the `process_shard` task, as a plain function."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from docq.catalog import ModelCatalog
from docq.errors import NotFound
from docq.jobs import JobStatus
from docq.store import JobStore
from workers.inference import TritonInference
from workers.pipeline import classify
from workers.tokenizing import load_tokenizer

log = logging.getLogger(__name__)


@dataclass
class WorkerContext:
    """Per-process clients of a worker, created after fork."""

    store: JobStore
    catalog: ModelCatalog
    triton: TritonInference


def run_shard(ctx: WorkerContext, job_id: str, n: int) -> JobStatus | None:
    """Classify shard n of a job and store its results; returns the job status after it.

    Safe to run twice (redelivery): results overwrite and progress does not double.
    A shard of a cancelled, finished or expired job is skipped.
    """
    try:
        job = ctx.store.get_job(job_id)
    except NotFound:
        log.info("job %s is gone (expired or deleted); skipping shard %d", job_id, n)
        return None
    if job.status.final:
        return job.status
    if ctx.store.mark_running(job_id) in (None, JobStatus.CANCELLED):
        return JobStatus.CANCELLED
    documents = ctx.store.load_shard(job, n)
    spec = ctx.catalog.spec(job.model)
    preds = classify(
        [d.text for d in documents], spec, load_tokenizer(spec.tokenizer_dir), ctx.triton
    )
    results: list[tuple[int, dict[str, Any]]] = [
        (d.index, {"id": d.id, "label": p.label, "scores": p.scores, "windows": p.windows})
        for d, p in zip(documents, preds, strict=True)
    ]
    status = ctx.store.complete_shard(job_id, n, results)
    log.info("job %s shard %d: %d documents -> %s", job_id, n, len(results), status)
    return status


def fail_shard(ctx: WorkerContext, job_id: str, n: int, error: str) -> JobStatus | None:
    """Give every document of shard n an error result, so the job can still finish."""
    try:
        job = ctx.store.get_job(job_id)
        documents = ctx.store.load_shard(job, n)
    except NotFound:
        return None
    results = [(d.index, {"id": d.id, "error": error}) for d in documents]
    return ctx.store.complete_shard(job_id, n, results)
