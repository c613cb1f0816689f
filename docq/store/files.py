"""Uploaded files in the job store, from the upload until the extract worker has read them.

Each file's bytes are a key of their own (keys.file), written in the transaction that
creates the job and deleted in the one that writes their text into the shard (`read_into`),
so Redis holds a file's bytes only while it waits to be read: the store's memory limit
(maxmemory, the API's 503 store_full) counts queued files, never read ones. Every Redis
failure raises StoreUnavailable (connection.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis

from docq import keys
from docq.store.codec import Document, ShardDocument, pack_entries


class Files:
    """The bytes of the files of jobs not read yet; shares the job store's client."""

    def __init__(self, client: redis.Redis) -> None:
        self.r = client

    @staticmethod
    def store_in(p: Any, job_id: str, documents: Sequence[Document], *, ttl_s: int) -> None:
        """Queue on pipeline `p` the bytes of every file of `documents` (upload order)."""
        for i, d in enumerate(documents):
            if d.content is not None:
                p.set(keys.file(job_id, i), d.content, ex=ttl_s)

    def load(self, job_id: str, index: int) -> bytes | None:
        """The bytes of document `index`'s file; None once read (or expired)."""
        raw = self.r.get(keys.file(job_id, index))
        assert raw is None or isinstance(raw, bytes)  # the client does not decode responses
        return raw

    def read_into(self, job_id: str, n: int, documents: Sequence[ShardDocument]) -> bool:
        """Write shard n again with `documents` (its files now read or failed) and delete
        those files, in one transaction; False (nothing written) when the shard is gone,
        i.e. done with its documents dropped: a late run never brings a shard back."""
        entries = [d.entry() for d in documents]
        with self.r.pipeline(transaction=True) as p:
            p.set(keys.shard(job_id, n), pack_entries(entries), xx=True, keepttl=True)
            done = [
                keys.file(job_id, d.index) for d in documents if d.content_type and not d.pending
            ]
            if done:
                p.delete(*done)
            written = p.execute()[0]
        return bool(written)
