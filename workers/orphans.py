"""The orphan sweep: blobs that no job refers to, deleted after a grace period.

A file's blob is written before its job (the API streams it in as the upload arrives) and
deleted after its text is stored (store/files.py). Whatever a crash or a refusal
interrupts in between leaves a blob no file key refers to: an upload refused or abandoned
after its files streamed in (the API killed mid-upload), a job deleted or expired before
its files were read, a worker killed after storing a text and before deleting its blob,
a write never committed. The sweeper thread of the shard workers (workers/sweeper.py)
calls `sweep_due` each round; one worker of the fleet at a time (a Redis key held for the
interval) lists the store and deletes every blob older than `blob_orphan_grace_s` that no
file key refers to. The grace must exceed the longest upload: until its job is stored, an
upload's blobs are referred to by nothing.
"""

from __future__ import annotations

import logging
from itertools import islice

from docq import keys
from docq.config import Settings
from docq.errors import DocqError
from docq.store import JobStore

log = logging.getLogger(__name__)

BATCH = 500  # names checked against Redis (two pipelines) and deleted at once


def sweep_orphans(store: JobStore, *, grace_s: float, now: float) -> int:
    """Delete every blob (and every unfinished write) older than `grace_s` that no job
    refers to; how many it deleted. Raises BlobStoreUnavailable or StoreUnavailable."""
    blobs = store.files.blobs
    if blobs is None:
        return 0
    before = now - grace_s
    dropped = blobs.drop_partial(before)
    names = blobs.older_than(before)
    while batch := list(islice(names, BATCH)):
        orphans = sorted(set(batch) - store.files.referenced(batch))
        if orphans:
            blobs.delete(orphans)
            dropped += len(orphans)
    if dropped:
        log.warning("deleted %d orphaned blobs (no job refers to them) from %s", dropped, blobs.url)
    return dropped


def sweep_due(store: JobStore, s: Settings, now: float) -> int:
    """`sweep_orphans` if no worker of the fleet swept in the last `blob_sweep_interval_s`;
    a failure is logged (the next interval tries again), never raised into the sweeper."""
    try:
        interval = max(1, int(s.blob_sweep_interval_s))
        if not store.r.set(keys.blob_sweep(), repr(now), nx=True, ex=interval):
            return 0
        return sweep_orphans(store, grace_s=s.blob_orphan_grace_s, now=now)
    except DocqError as exc:  # the blob store or Redis unavailable: skipped this time
        log.warning("orphan sweep skipped: %s", exc.message)
    except Exception:  # a sweep that died would free nothing: log it, go on
        log.exception("orphan sweep failed")
    return 0
