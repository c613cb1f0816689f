"""Process one shard of a job: the body of the `process_shard` task, as a plain function."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from docq.catalog import ModelCatalog
from docq.errors import ModelError, NotFound
from docq.jobs import JobRecord, JobStatus
from docq.store import JobStore, ShardDocument
from docq.store.manifests import fail_part
from docq.text.aggregation import Prediction
from docq.text.tokenizing import load_tokenizer
from workers import metrics
from workers.batcher import Batcher
from workers.pipeline import classify_documents

log = logging.getLogger(__name__)


# Triton request priority of small jobs' windows (1 is the highest level; bulk jobs send 0,
# the model's default level). Models written by conversion/ have two priority levels.
SMALL_JOB_PRIORITY = 1


@dataclass
class WorkerContext:
    """Per-process clients of a worker, created after fork."""

    store: JobStore
    catalog: ModelCatalog
    batcher: Batcher  # shared by every shard the process runs


def _no_hook(job_id: str) -> None:
    """The default `on_final`: nothing to tell anyone."""


def run_shard(
    ctx: WorkerContext,
    job_id: str,
    n: int,
    *,
    keep_documents: bool = True,
    on_final: Callable[[str], None] = _no_hook,
    read_part: Callable[[JobRecord], object] | None = None,
) -> JobStatus | None:
    """Classify shard n of a job and store its results; returns the job status after it.

    Safe to run twice (redelivery, or the sweeper after a lost worker): a shard that
    already has results is skipped, and of two runs at once the second to finish writes
    nothing unless it classified what the first gave up on (store/lua/complete_shard.lua).
    A shard of a cancelled, finished or expired job is skipped. `on_final(job_id)` runs
    when this shard made the job final, and again when a redelivered shard finds the job
    final (so a crash between the two cannot lose the job's event; the hook dispatches
    the event only if that never happened). Without `keep_documents`, the shard's
    documents are deleted in the same write as its results.
    """
    try:
        job = ctx.store.get_job(job_id)
    except NotFound:
        log.info("job %s is gone (expired or deleted); skipping shard %d", job_id, n)
        return None
    if job.status.final:
        on_final(job_id)
        return job.status
    if ctx.store.mark_running(job_id) in (None, JobStatus.CANCELLED):
        return JobStatus.CANCELLED
    if ctx.store.shard_completed(job_id, n):
        log.info("job %s shard %d: already done; skipping", job_id, n)
        return job.status
    if job.manifest is not None and read_part is not None:
        read_part(job)  # a part not read yet (NDJSON-only jobs skip extract): read it now
    documents = ctx.store.load_shard(job, n)
    if any(d.pending for d in documents):  # never: enqueue_shards sends these to extract
        raise ModelError(f"job {job_id} shard {n}: its files were not read before classifying")
    started = time.monotonic()
    # Explicit model control: load the model on first use (waits for it; never fails here).
    ctx.catalog.ensure_ready(job.model)
    spec = ctx.catalog.spec(job.model)
    readable = [d for d in documents if d.error is None]  # a file that was unreadable is not
    preds = (
        classify_documents(
            [d.text for d in readable],
            spec,
            load_tokenizer(spec.tokenizer_dir),
            ctx.batcher,
            priority=SMALL_JOB_PRIORITY if job.priority else 0,
        )
        if readable
        else []
    )
    answers = dict(zip((d.index for d in readable), preds, strict=True))
    results = [(d.index, result(d, answers.get(d.index))) for d in documents]
    done = ctx.store.finish_shard(job_id, n, results, drop_documents=not keep_documents)
    metrics.SHARD_SECONDS.labels(job.model).observe(time.monotonic() - started)
    if done.written:
        metrics.DOCUMENTS.labels(job.model, "classified").inc(len(results))
    log.info("job %s shard %d: %d documents -> %s", job_id, n, len(results), done.status)
    if done.performed:
        metrics.job_final(job, done.status)
        on_final(job_id)
    return done.status


def result(doc: ShardDocument, pred: Prediction | str | None) -> dict[str, Any]:
    """A document's result: its prediction, or the model's refusal of its input (a str),
    or (None) why its file could not be read; with how it was read (a text upload: one
    page of "text"), `chars` the characters read."""
    if pred is None:
        return {"id": doc.id, "error": doc.error, "error_code": doc.error_code}
    read = {
        "pages": doc.pages,
        "extraction": doc.extraction,
        "chars": doc.chars if doc.chars is not None else len(doc.text),
    }
    if isinstance(pred, str):
        return {"id": doc.id, "error": pred, **read}
    return {
        "id": doc.id,
        "label": pred.label,
        "scores": pred.scores,
        "windows": pred.windows,
        **read,
    }


def fail_shard(
    ctx: WorkerContext,
    job_id: str,
    n: int,
    error: str,
    *,
    keep_documents: bool = True,
    on_final: Callable[[str], None] = _no_hook,
) -> JobStatus | None:
    """Give every document of shard n an error result, so the job can still finish.

    A shard that already has results keeps them (the failure came after they were written,
    e.g. while dispatching the job's event, or a duplicate run succeeded meanwhile): the
    check and the write are one script (finish_shard), so no success in between is lost.
    """
    try:
        job = ctx.store.get_job(job_id)
        if job.manifest is not None:  # a part never read: its object's one failed document
            fail_part(ctx.store, job, n, error)
        documents = ctx.store.load_shard(job, n)
    except NotFound:  # the job is gone, or the shard is done and its documents dropped
        return None
    # a document that failed before (a bad file) keeps its own error and code
    results = [
        (d.index, result(d, None) if d.error_code else {"id": d.id, "error": error})
        for d in documents
    ]
    done = ctx.store.finish_shard(job_id, n, results, drop_documents=not keep_documents)
    if done.written:
        metrics.DOCUMENTS.labels(job.model, "failed").inc(len(results))
    if done.performed:
        metrics.job_final(job, done.status)
        on_final(job_id)
    return done.status
