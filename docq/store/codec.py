"""How shards are stored: zstd-compressed JSON, one entry per document.

- a text document: `[id, text]` (as every shard was before files);
- a file document: `[id, text or null, meta]`, `meta` = `{"type": content type, "state":
  "pending" | "read" | "failed", ...}`. While pending, the file's bytes sit in the blob
  store, raw (PDFs and images are compressed already), its reference in a key of its own
  (keys.file, store/files.py). Once read, the text is in the entry with `pages`,
  `extraction` and `chars` (the file's key is deleted in the same write); once failed,
  `error` and `code` (ExtractionFailed's) say why.
"""

from __future__ import annotations

import json
import os
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pydantic_core
import zstandard

from docq.blobs.base import BlobRef

PENDING, READ, FAILED = "pending", "read", "failed"


@dataclass(frozen=True, slots=True)
class Document:
    """One uploaded document: its text, or (a file) its bytes and sniffed content type, or
    (a document the API found bad) why it failed: stored failed, with no bytes."""

    id: str
    text: str
    content_type: str | None = None  # set for a file; its bytes are `content`
    # a file's bytes, or where they are already (streamed into the blob store at upload)
    content: bytes | BlobRef | None = None
    error: str | None = None  # set with error_code: failed at upload (api/files.py)
    error_code: str | None = None


@dataclass(frozen=True, slots=True)
class ShardDocument:
    """A document inside a shard, with its position in the upload; a file's entry says
    whether it was read yet (`pending`), and how (`pages`, `extraction`, `chars`), or why
    not (`error`, `error_code`)."""

    index: int
    id: str
    text: str
    content_type: str | None = None  # None: uploaded as text
    state: str = READ
    pages: int = 1
    extraction: str = "text"
    chars: int | None = None  # None: len(text)
    error: str | None = None
    error_code: str | None = None

    @property
    def pending(self) -> bool:
        return self.state == PENDING

    def entry(self) -> list[Any]:
        """The stored form of this document (see the module's docstring)."""
        if self.content_type is None:
            return [self.id, self.text]
        meta: dict[str, Any] = {"type": self.content_type, "state": self.state}
        if self.state == READ:
            meta.update(pages=self.pages, extraction=self.extraction, chars=self.chars)
        elif self.state == FAILED:
            meta.update(error=self.error, code=self.error_code)
        return [self.id, self.text if self.state == READ else None, meta]


def shard_document(index: int, entry: Sequence[Any]) -> ShardDocument:
    """A stored entry as a ShardDocument at position `index` of its upload."""
    if len(entry) == 2:
        return ShardDocument(index, entry[0], entry[1])
    doc_id, text, meta = entry
    return ShardDocument(
        index,
        doc_id,
        text or "",
        content_type=meta["type"],
        state=meta["state"],
        pages=meta.get("pages", 0),
        extraction=meta.get("extraction", ""),
        chars=meta.get("chars"),
        error=meta.get("error"),
        error_code=meta.get("code"),
    )


# zstd level 1: a 1,000-document upload (3 MB) compresses in ~7 ms, 3x faster than zlib -1
# and smaller. The JSON is written by pydantic-core's encoder (Rust; UTF-8, not \u escapes,
# which json.loads reads alike): 80 ms for a 20,000-document upload (60 MB) where json.dumps
# took 240. Both sit on the upload's critical path (acceptance latency, docs/performance.md).
# A zstd context is not thread-safe (the API stores uploads from a thread pool): one each.
_zstd = threading.local()

# Threads that compress an upload's shards while the next ones are encoded: zstd releases
# the GIL, so on a machine with free cores compressing costs little more than encoding.
# More threads take more cores from whatever else runs beside the API (on the GPU host, 16
# cores: up to 4 of them, for an upload's few hundred milliseconds).
PACK_THREADS = max(1, min(4, (os.cpu_count() or 1) - 1))
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _entry(d: Document) -> list[Any]:
    if d.error_code is not None:  # answered by the worker exactly as a file that failed reading
        meta = {"type": d.content_type or "text/plain", "state": FAILED}
        return [d.id, None, {**meta, "error": d.error, "code": d.error_code}]
    if d.content_type is None:
        return [d.id, d.text]
    return [d.id, None, {"type": d.content_type, "state": PENDING}]


def _compress(raw: bytes) -> bytes:
    if not hasattr(_zstd, "compressor"):
        _zstd.compressor = zstandard.ZstdCompressor(level=1)
    return _zstd.compressor.compress(raw)  # type: ignore[no-any-return]


def _encode(entries: Sequence[Sequence[Any]]) -> bytes:
    """An upload's entries as JSON. Its text holds no lone surrogate (the schema refuses
    them), which pydantic-core cannot encode; json.dumps escapes one if it is there."""
    try:
        return pydantic_core.to_json(entries)
    except pydantic_core.PydanticSerializationError:
        return json.dumps(entries).encode()


def pack_shard(chunk: Sequence[Document]) -> bytes:
    return _compress(_encode([_entry(d) for d in chunk]))


def pack_entries(entries: Sequence[Sequence[Any]]) -> bytes:
    """Entries as the worker writes them back (files read: extracted text, which may hold
    anything a PDF does, lone surrogates too: json.dumps escapes them)."""
    return _compress(json.dumps(entries).encode())


def pack_shards(chunks: Iterable[Sequence[Document]]) -> Iterator[bytes]:
    """`pack_shard` of each chunk, in order: each encoded in this thread and compressed in
    PACK_THREADS others meanwhile (at most twice as many shards encoded and not yet
    compressed, so an upload holds a few of its shards twice, never all of them)."""
    global _pool
    with _pool_lock:
        if _pool is None:  # made on first use: in the process that packs, after any fork
            _pool = ThreadPoolExecutor(PACK_THREADS, thread_name_prefix="docq-pack")
    pool = _pool
    ahead: deque[Future[bytes]] = deque()
    for chunk in chunks:
        if len(ahead) >= 2 * PACK_THREADS:
            yield ahead.popleft().result()
        ahead.append(pool.submit(_compress, _encode([_entry(d) for d in chunk])))
    while ahead:
        yield ahead.popleft().result()


def unpack_shard(raw: bytes) -> Any:
    if not hasattr(_zstd, "decompressor"):
        _zstd.decompressor = zstandard.ZstdDecompressor()
    return json.loads(_zstd.decompressor.decompress(raw))


def decode(h: Mapping[Any, Any]) -> dict[str, str]:
    """A Redis hash of bytes as a dict of str."""
    return {k.decode(): v.decode() for k, v in h.items()}


def decode_values(values: Sequence[Any]) -> list[str | None]:
    return [v.decode() if isinstance(v, bytes) else v for v in values]
