"""The orphan sweep (workers/orphans.py) against a real Redis and a real directory store:
a blob no job refers to is deleted after the grace period and not before; a blob a job
refers to never is; one sweep per interval across the fleet."""

from __future__ import annotations

import time

from docq import keys
from docq.blobs import DirectoryStore, put
from docq.config import Settings
from docq.store import Document, JobStore
from tests.support.files import INVOICE, pdf
from workers.orphans import sweep_due, sweep_orphans

GRACE = 60.0


def names(store: JobStore) -> list[str]:
    assert isinstance(store.files.blobs, DirectoryStore)
    root = store.files.blobs.root
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_orphans_go_after_the_grace_period_and_referenced_blobs_stay(store: JobStore) -> None:
    blobs = store.files.blobs
    assert blobs is not None
    job = store.create_job(
        "doc-type",
        [Document("a.pdf", "", "application/pdf", pdf(INVOICE)), Document("t", "text")],
    )
    refused = put(blobs, "0123abcd/0", pdf(INVOICE))  # an upload refused after it streamed
    partial = blobs.writer("0123abcd/1")
    partial.write(b"%PDF-1.4 a write its killed process never finished")
    try:
        sweeps(store, job.id, refused.key)
    finally:
        partial.abort()  # (its file handle)


def sweeps(store: JobStore, job_id: str, refused: str) -> None:
    read = f"{job_id}/0"
    now = time.time()
    assert sweep_orphans(store, grace_s=GRACE, now=now + GRACE / 2) == 0, "within the grace"
    assert names(store)[-2:] == [refused, read] and len(names(store)) == 3

    assert sweep_orphans(store, grace_s=GRACE, now=now + 2 * GRACE) == 2  # refused + partial
    assert names(store) == [read], "a blob its job refers to is never an orphan"

    store.r.delete(keys.file(job_id, 0))  # a worker killed between storing the text and
    assert sweep_orphans(store, grace_s=GRACE, now=now + 2 * GRACE) == 1  # deleting the blob
    assert names(store) == []


def test_a_blob_named_like_a_referenced_one_but_not_referred_to_is_an_orphan(
    store: JobStore,
) -> None:
    """A file key refers to one blob by its full name: another blob of the same upload
    and part number is not kept by it."""
    blobs = store.files.blobs
    assert blobs is not None
    job = store.create_job("doc-type", [Document("a.pdf", "", "application/pdf", pdf(INVOICE))])
    store.r.hset(keys.file_blobs(job.id), "7", f"{job.id} 0")  # points at a key of another blob
    put(blobs, f"{job.id}/7", b"%PDF-1.4 stray")
    assert sweep_orphans(store, grace_s=GRACE, now=time.time() + 2 * GRACE) == 1
    assert names(store) == [f"{job.id}/0"]


def test_one_sweep_per_interval_across_workers(store: JobStore) -> None:
    blobs = store.files.blobs
    assert blobs is not None
    store.r.delete(keys.blob_sweep())
    s = Settings(blob_orphan_grace_s=0.5, blob_sweep_interval_s=300)
    put(blobs, "feed/0", b"x")
    later = time.time() + 5
    assert sweep_due(store, s, later) == 1
    put(blobs, "feed/1", b"y")
    assert sweep_due(store, s, later) == 0, "another worker swept this interval"
    store.r.delete(keys.blob_sweep())
    assert sweep_due(store, s, later) == 1
