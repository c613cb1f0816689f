"""What every blob store is: a name space of immutable blobs written as a stream.

A blob is written once through a `BlobWriter` (chunks as they arrive, then `commit`, which
makes it visible whole or not at all), read whole by the extract worker, and deleted once
its text is stored. Its name is `<upload>/<part>`: the upload that wrote it and the file's
position in that upload (store/files.py keeps, in Redis, which job refers to it). A
`BlobRef` is what Redis keeps instead of the bytes: the name, the size and the SHA-256.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class BlobRef:
    """A stored blob: its name, its size in bytes and its SHA-256 (hex)."""

    key: str
    size: int
    sha256: str

    @property
    def upload(self) -> str:
        return self.key.partition("/")[0]

    @property
    def part(self) -> str:
        return self.key.partition("/")[2]

    def encode(self) -> bytes:
        """The reference as Redis keeps it (short keys: one per queued file)."""
        return json.dumps({"k": self.key, "n": self.size, "h": self.sha256}).encode()

    @classmethod
    def decode(cls, raw: bytes) -> BlobRef:
        d = json.loads(raw)
        return cls(d["k"], d["n"], d["h"])


def digest(content: bytes | BlobRef) -> str:
    """A file's SHA-256 (hex), whether its bytes are at hand or already stored."""
    if isinstance(content, BlobRef):
        return content.sha256
    return hashlib.sha256(content).hexdigest()


class BlobWriter(Protocol):
    """One blob being written: `write` its chunks, then `commit` (or `abort`)."""

    def write(self, data: bytes) -> None: ...

    def commit(self) -> BlobRef:
        """Make the blob visible, whole; its reference."""
        ...

    def abort(self) -> None:
        """Drop what was written (nothing of the blob stays visible); safe to call twice."""
        ...


class BlobStore(Protocol):
    """Where uploaded files' bytes wait for the extract workers. Every failure of the
    store itself raises BlobStoreUnavailable (retryable); a missing blob is None."""

    url: str  # where it is, for logs (no credentials)

    def writer(self, key: str) -> BlobWriter: ...

    def get(self, key: str) -> bytes | None:
        """The blob's bytes, or None when there is no such blob."""
        ...

    def delete(self, keys: Sequence[str]) -> None:
        """Delete these blobs; one that is not there is no error."""
        ...

    def older_than(self, before: float) -> Iterator[str]:
        """The name of every blob last written before `before` (epoch seconds)."""
        ...

    def drop_partial(self, before: float) -> int:
        """Remove what writers that never committed nor aborted (a process killed mid-
        upload) left since before `before`; how many such writes it removed."""
        ...


class Digesting:
    """What a writer counts as the chunks go by: size and SHA-256."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.size = 0
        self._sha = hashlib.sha256()

    def _count(self, data: bytes) -> None:
        self.size += len(data)
        self._sha.update(data)

    def _ref(self) -> BlobRef:
        return BlobRef(self.key, self.size, self._sha.hexdigest())


def put(store: BlobStore, key: str, data: bytes) -> BlobRef:
    """Write one blob whose bytes are all at hand."""
    w = store.writer(key)
    try:
        w.write(data)
        return w.commit()
    except BaseException:
        w.abort()
        raise
