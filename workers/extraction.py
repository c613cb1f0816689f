"""Read the files of one shard into text: the body of the `extract_shard` task.

Runs before classification, in the extract workers (docq/queue.py EXTRACT_QUEUE). Each
pending file of the shard is read by `docq.extract.extract_isolated` (a child process per
file, with the per-document limits: pages, pixels, decompressed size, time), several at
once; the text (or the file's ExtractionFailed: that document's error, never the job's)
is written back into the shard and the file's reference deleted, in one transaction, then
its blob (store/files.py). Then the task hands the shard to `process_shard`.

A file's bytes come from the blob store (docq.blobs): a store that fails raises
BlobStoreUnavailable, which the task retries (Celery's retry, workers/tasks.py) with the
file still referenced; a blob that is gone while its reference is not fails that document
(`missing`), never the shard.

Safe to run twice: a shard with no pending file is not read again, and two runs at once
write the same entries (extraction is deterministic); a run that finds a file already gone
reloads the shard and stops if another run finished it.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from docq.errors import ExtractionFailed, NotFound
from docq.extract import Limits, extract_isolated
from docq.jobs import JobRecord, JobStatus
from docq.store import JobStore, ShardDocument
from docq.store.codec import FAILED, READ
from workers import metrics

log = logging.getLogger(__name__)


def read_file(data: bytes, doc: ShardDocument, limits: Limits) -> ShardDocument:
    """`doc` with its file read (text, pages, how, characters) or failed (why)."""
    assert doc.content_type is not None
    started = time.monotonic()
    try:
        got = extract_isolated(data, doc.content_type, limits)
    except ExtractionFailed as exc:
        metrics.EXTRACT_SECONDS.labels(doc.content_type, exc.code).observe(
            time.monotonic() - started
        )
        return dataclasses.replace(doc, state=FAILED, error=exc.message, error_code=exc.code)
    metrics.EXTRACT_SECONDS.labels(doc.content_type, "read").observe(time.monotonic() - started)
    metrics.EXTRACT_PAGES.labels(got.extraction).inc(got.pages)
    return dataclasses.replace(
        doc, state=READ, text=got.text, pages=got.pages, extraction=got.extraction, chars=got.chars
    )


def _read(store: JobStore, job_id: str, doc: ShardDocument, limits: Limits) -> ShardDocument | None:
    try:
        data = store.files.load(job_id, doc.index)
    except ExtractionFailed as exc:  # its blob is gone: this document's error
        return dataclasses.replace(doc, state=FAILED, error=exc.message, error_code=exc.code)
    if data is None:  # read by another run meanwhile (or expired with the job)
        return None
    return read_file(data, doc, limits)


def extract_shard(
    store: JobStore,
    job_id: str,
    n: int,
    *,
    limits: Limits,
    parallel: int,
    read_part: Callable[[JobRecord, int], bool] | None = None,
) -> JobRecord | None:
    """Read shard n's pending files, `parallel` at once; returns the job when the shard is
    to be classified next, None when there is nothing to hand on (the job is gone, final
    or cancelled, or the shard has results already). A manifest job's shard is a part of
    its objects, read by `read_part` (workers/objects.py)."""
    try:
        job = store.get_job(job_id)
    except NotFound:
        log.info("job %s is gone (expired or deleted); skipping shard %d", job_id, n)
        return None
    if job.status.final or job.status == JobStatus.CANCELLED:
        return None
    if store.shard_completed(job_id, n):
        return None
    if job.manifest is not None and read_part is not None:
        return job if read_part(job, n) else None
    documents = store.load_shard(job, n)
    pending = [d for d in documents if d.pending]
    if not pending:
        return job
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(pending)))) as pool:
        read = list(pool.map(lambda d: _read(store, job_id, d, limits), pending))
    if any(r is None for r in read):  # another run read (some of) them: go by what it wrote
        if any(d.pending for d in store.load_shard(job, n)):
            raise NotFound(f"job {job_id} shard {n}: a file is gone before it was read")
        return job
    by_index = {d.index: d for d in read if d is not None}
    if not store.files.read_into(job_id, n, [by_index.get(d.index, d) for d in documents]):
        return None  # the shard is done and its documents dropped: nothing to hand on
    log.info(
        "job %s shard %d: %d files read in %.2fs (%d failed)",
        job_id,
        n,
        len(pending),
        time.monotonic() - started,
        sum(1 for d in by_index.values() if d.state == FAILED),
    )
    return job
