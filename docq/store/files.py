"""Uploaded files in the job store, from the upload until the extract worker has read them.

A file's bytes are a blob (docq.blobs: a directory or an S3-compatible store); Redis holds
its reference (keys.file: name, size, SHA-256, about a hundred bytes), written in the
transaction that creates the job and deleted in the one that writes the file's text into
its shard (`read_into`), and the blob is deleted after that transaction commits. So a
file is read into its shard once, and Redis memory does not grow with queued files' sizes.

Whatever a crash interrupts, a blob that no file key refers to is an orphan: the sweep
(workers/orphans.py) deletes it after the grace period, using `referenced`. Every Redis
failure raises StoreUnavailable (connection.py), every blob store failure
BlobStoreUnavailable (retryable both).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import redis

from docq import keys
from docq.blobs import BlobRef, BlobStore, put
from docq.errors import BlobStoreUnavailable, ExtractionFailed
from docq.store.codec import Document, ShardDocument, pack_entries

log = logging.getLogger(__name__)


class Files:
    """The files of jobs not read yet: references in Redis (the job store's client), bytes
    in `blobs` (None: a store of text jobs only, which refuses files)."""

    def __init__(self, client: redis.Redis, blobs: BlobStore | None = None) -> None:
        self.r = client
        self.blobs = blobs

    def _store(self) -> BlobStore:
        if self.blobs is None:
            raise RuntimeError("this job store has no blob store for files (docq.blobs)")
        return self.blobs

    def store_in(self, p: Any, job_id: str, documents: Sequence[Document], *, ttl_s: int) -> None:
        """Queue on pipeline `p` the reference of every file of `documents` (upload order).
        A file streamed in already (api/streaming.py) carries its BlobRef; one whose bytes
        are at hand (a JSON upload's base64) is stored now, as `<job_id>/<index>`."""
        uploads: set[str] = set()
        for i, d in enumerate(documents):
            if d.content is None:
                continue
            ref = d.content
            if not isinstance(ref, BlobRef):
                ref = put(self._store(), f"{job_id}/{i}", ref)
            p.set(keys.file(job_id, i), ref.encode(), ex=ttl_s)
            p.hset(keys.file_blobs(ref.upload), ref.part, f"{job_id} {i}")
            uploads.add(ref.upload)
        for upload in uploads:
            p.expire(keys.file_blobs(upload), ttl_s)

    def load(self, job_id: str, index: int) -> bytes | None:
        """The bytes of document `index`'s file; None once read (or expired with its job).
        Raises ExtractionFailed (`missing`) when its reference is there and its blob not:
        that document's error, never a lost document."""
        raw = self.r.get(keys.file(job_id, index))
        if raw is None:
            return None
        assert isinstance(raw, bytes)  # the client does not decode responses
        ref = BlobRef.decode(raw)
        data = self._store().get(ref.key)
        if data is None:
            raise ExtractionFailed(
                "missing",
                f"the file's bytes are gone from the blob store ({ref.key}) before it was read",
            )
        return data

    def read_into(self, job_id: str, n: int, documents: Sequence[ShardDocument]) -> bool:
        """Write shard n again with `documents` (its files now read or failed) and delete
        those files' references, in one transaction, then their blobs; False (nothing
        written) when the shard is gone, i.e. done with its documents dropped: a late run
        never brings a shard back."""
        entries = [d.entry() for d in documents]
        done = [keys.file(job_id, d.index) for d in documents if d.content_type and not d.pending]
        with self.r.pipeline(transaction=True) as p:
            p.set(keys.shard(job_id, n), pack_entries(entries), xx=True, keepttl=True)
            for key in done:
                p.get(key)
            if done:
                p.delete(*done)
            replies = p.execute()
        self.discard([BlobRef.decode(raw) for raw in replies[1 : 1 + len(done)] if raw])
        return bool(replies[0])

    def discard(self, refs: Sequence[BlobRef]) -> None:
        """Delete the blobs of references already deleted; best effort: what a store
        failure leaves is an orphan, for the sweep."""
        if not refs:
            return
        try:
            self._store().delete([ref.key for ref in refs])
        except BlobStoreUnavailable as exc:
            log.warning("%d blobs left for the orphan sweep: %s", len(refs), exc.message)

    def referenced(self, names: Sequence[str]) -> set[str]:
        """Those of these blob names a file key still refers to."""
        parts = [name.partition("/") for name in names]
        with self.r.pipeline(transaction=False) as p:
            for upload, _, part in parts:
                p.hget(keys.file_blobs(upload), part)
            owners = p.execute()
        holders = {
            name: raw.decode().split() for name, raw in zip(names, owners, strict=True) if raw
        }
        with self.r.pipeline(transaction=False) as p:
            for job_id, index in holders.values():
                p.get(keys.file(job_id, int(index)))
            refs = p.execute()
        return {
            name
            for name, raw in zip(holders, refs, strict=True)
            if raw and BlobRef.decode(raw).key == name
        }
