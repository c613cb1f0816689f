"""Read one part of a manifest job from the object store (docs/manifests.md).

Runs in the extract workers, where any job with files starts: a part's shard holds its
reference (store/manifests.py) until this reads it into documents and writes them in
place (`write_part`, once per part), then the shard is classified like any other.

- An NDJSON part: bytes [start - 1, end) of its object and on to the end of the line that
  crosses `end`; each line that starts in [start, end) is a document `{"id", "text"}`.
  A line that is not such an object is that document's error (`invalid_line`, its id
  `<object>@<offset>`); an id another document of the job took, `duplicate_id`.
- A group of files: each object read whole and judged from its bytes (docq.extract, in a
  child process per file, with the per-document limits), its id its name.
- An object gone before it is read: `missing`, that document's (a file), or the NDJSON
  object's first part's (one document `<object>`; its other parts then hold none).
- A part of a job already at its cap (DOCQ_MANIFEST_MAX_DOCUMENTS) is not fetched: one
  document `too_many_documents` stands for it (write_part cuts a part that crosses it).

A store failure raises BlobStoreUnavailable: the task retries, nothing written.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from docq.extract import Limits, sniff
from docq.jobs import JobRecord
from docq.manifests import Part
from docq.objects import Objects, open_objects
from docq.store import JobStore
from docq.store.codec import FAILED, PENDING, ShardDocument
from docq.store.manifests import past_cap, pending_part, room_left, write_part
from workers.extraction import read_file

if TYPE_CHECKING:
    from docq.config import Settings

# How much more of an object a part reads, at a time, to finish the line crossing its end.
TAIL_BYTES = 64 * 1024


def _failed(index: int, doc_id: str, code: str, message: str) -> ShardDocument:
    return ShardDocument(
        index, doc_id, "", "text/plain", state=FAILED, error=message, error_code=code
    )


def _name(key: str, tenant_prefix: str) -> str:
    return key[len(tenant_prefix) :] if key.startswith(tenant_prefix) else key


def part_bytes(objects: Objects, part: Part) -> bytes | None:
    """The bytes an NDJSON part needs (see the module's docstring); None: the object is gone."""
    key, start, end = part.keys[0], part.start, part.end
    data = objects.read(key, max(0, start - 1), end)
    if data is None:
        return None
    tail = end
    while not data.endswith(b"\n"):
        more = objects.read(key, tail, tail + TAIL_BYTES)
        if not more:  # the object's end
            break
        data += more
        tail += len(more)
        if b"\n" in more:
            break
    return data


def ndjson_documents(
    data: bytes, part: Part, base: int, name: str, max_chars: int
) -> list[ShardDocument]:
    """The documents of an NDJSON part's lines, numbered from `base`."""
    from docq.manifests import lines

    docs = []
    for k, (offset, raw) in enumerate(lines(data, part.start, part.end)):
        docs.append(_line(base + k, raw, f"{name}@{offset}", max_chars))
    return docs


def _line(index: int, raw: bytes, where: str, max_chars: int) -> ShardDocument:
    try:
        d: Any = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return _failed(index, where, "invalid_line", f"line {where} is not JSON: {exc}")
    if not isinstance(d, dict) or not isinstance(d.get("id"), str) or not d["id"]:
        return _failed(index, where, "invalid_line", f"line {where} has no string `id`")
    text = d.get("text")
    if not isinstance(text, str) or not text.strip():
        return _failed(index, d["id"], "invalid_line", f"line {where} has no `text` to classify")
    if "\x00" in text:
        return _failed(index, d["id"], "not_utf8", f"line {where}: its text holds a NUL character")
    if len(text) > max_chars:
        return _failed(index, d["id"], "too_large", f"line {where}: over {max_chars} characters")
    return ShardDocument(index, d["id"], text)


def file_document(
    objects: Objects, key: str, index: int, name: str, limits: Limits, max_bytes: int
) -> ShardDocument:
    """One file object as a document: read, or failed (why)."""
    size = objects.size(key)
    if size is None:
        return _failed(index, name, "missing", f"the object {name} is gone")
    if size > max_bytes:
        return _failed(index, name, "too_large", f"the object is {size} bytes, over {max_bytes}")
    data = objects.read(key)
    if data is None:
        return _failed(index, name, "missing", f"the object {name} is gone")
    if not data:
        return _failed(index, name, "empty", "the object is empty (0 bytes)")
    kind = sniff(data)
    if kind is None:
        why = "its bytes are none of the types docq reads"
        return _failed(index, name, "unsupported_type", why)
    return read_file(data, ShardDocument(index, name, "", kind, state=PENDING), limits)


def read_part(
    store: JobStore,
    objects: Objects,
    job: JobRecord,
    n: int,
    *,
    limits: Limits,
    max_chars: int,
    max_file_bytes: int,
    parallel: int,
) -> bool:
    """Read part n of a manifest job into its shard, unless read already; False when there
    is nothing to hand on (the job or the shard is gone)."""
    part = pending_part(store, job, n)
    if part is None:  # read by an earlier run (or gone: process_shard finds out)
        return True
    base = n * job.shard_size
    prefix = f"tenants/{job.tenant}/"
    room = room_left(store, job)
    if room is not None and room[0] == 0:  # nothing more fits: not worth a fetch
        docs = [past_cap(job, part, base, None, room[1])]
    elif part.ndjson:
        name = _name(part.keys[0], prefix)
        data = part_bytes(objects, part)
        if data is None:
            missing = [_failed(base, name, "missing", f"the object {name} is gone")]
            docs = missing if part.start == 0 else []
        else:
            docs = ndjson_documents(data, part, base, name, max_chars)
    else:

        def read(k_key: tuple[int, str]) -> ShardDocument:
            k, key = k_key
            return file_document(objects, key, base + k, _name(key, prefix), limits, max_file_bytes)

        with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(part.keys)))) as pool:
            docs = list(pool.map(read, enumerate(part.keys)))
    written = write_part(store, job, n, part, docs)
    return written or pending_part(store, job, n) is None


_objects: Objects | None = None


def process_objects(settings: Settings) -> Objects:
    """This process's object store (DOCQ_MANIFEST_URL); an S3 client is made per process."""
    global _objects
    if _objects is None:
        _objects = open_objects(settings)
    return _objects
