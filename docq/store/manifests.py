"""Manifest jobs on Redis (docq/manifests.py): created as parts, each read into its shard once.

At creation a part's shard holds one pending entry carrying the part's reference (a few
hundred bytes per part, whatever the objects hold): a 1,000,000-document job of 100 NDJSON
objects is a few hundred keys. A worker that reads a part writes its documents in place
of that entry (`write_part`, lua/write_part.lua), numbered from `part * stride`, and only
then does the shard go the way of any other (classified, finish_shard).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from typing import Any

from docq import keys
from docq.jobs import JobRecord, JobStatus
from docq.manifests import Part
from docq.store import connection
from docq.store.codec import (
    PENDING,
    ShardDocument,
    decode_values,
    pack_entries,
    unpack_shard,
)
from docq.store.deliveries import WebhookTarget
from docq.store.idempotency import IdempotencyClaim
from docq.store.jobs import JobStore

# The content type a part's pending entry carries (its `part` meta holds the reference).
PART_TYPE = "application/vnd.docq.part"


def create_manifest_job(
    store: JobStore,
    model: str,
    parts: Sequence[Part],
    stride: int,
    *,
    tenant: str,
    scope_uri: str,
    webhook: WebhookTarget | None = None,
    results_key: str | None = None,
    idempotency: tuple[str, IdempotencyClaim] | None = None,
    max_documents: int = 0,
) -> JobRecord:
    """Store a manifest job, one shard per part, in one transaction (as create_job), its
    record marked `manifest` with its `stride` as its shard size and `documents` 0 (they
    grow as parts are read), its cap `max_documents` (0: none) and `unread_bound`, the
    most documents its unread parts can hold (what its tenant's load counts: most_queued).
    A job with file objects goes to the extract queue first."""
    job_id = idempotency[1].job_id if idempotency else store.new_job_id()
    record: dict[Any, Any] = {
        "id": job_id,
        "model": model,
        "status": JobStatus.QUEUED.value,
        "documents": 0,
        "shards": len(parts),
        "shard_size": stride,
        "documents_done": 0,
        "documents_failed": 0,
        "created_at": repr(time.time()),
        "lane": "bulk",
        "tenant": tenant,
        # parts of files go to the extract workers first; a job of NDJSON objects only
        # goes straight to the classifying workers, which read each part as they take it
        # (their lines need no extraction), so reading never runs ahead of classifying
        "files": sum(1 for p in parts if not p.ndjson),
        "manifest": scope_uri,
        "parts_read": 0,
        "max_documents": max_documents,
        "documents_read": 0,  # those within the cap: all but too_many_documents ones
        "unread_bound": sum(p.most_documents() for p in parts),
    }
    if results_key is not None:
        record["results_key"] = results_key
    with store.r.pipeline(transaction=True) as p:
        for n, part in enumerate(parts):
            entry = [part.keys[0], None, {"type": PART_TYPE, "state": PENDING, "part": part.spec()}]
            p.set(keys.shard(job_id, n), pack_entries([entry]), ex=store.ttl_s)
        p.hset(keys.job(job_id), mapping=record)
        p.expire(keys.job(job_id), store.ttl_s)
        store._list_in(p, job_id, tenant, webhook, idempotency, float(record["created_at"]))
        store._execute(p, job_id, len(parts))
    return store.get_job(job_id)


def pending_part(store: JobStore, job: JobRecord, n: int) -> Part | None:
    """Part n's reference while it is not read yet; None once it is (or it is gone)."""
    raw = store.r.get(keys.shard(job.id, n))
    if raw is None:
        return None
    assert isinstance(raw, bytes)  # the client does not decode responses
    entries = unpack_shard(raw)
    if len(entries) == 1 and len(entries[0]) == 3 and entries[0][2].get("type") == PART_TYPE:
        return Part.from_spec(entries[0][2]["part"])
    return None


def most_queued(parts: Sequence[Part], max_documents: int) -> int:
    """The most documents a manifest job of `parts` can come to (what its tenant reserves
    at admission): its parts' most, within its cap."""
    most = sum(p.most_documents() for p in parts)
    return min(most, max_documents) if max_documents > 0 else most


def write_part(
    store: JobStore, job: JobRecord, n: int, part: Part, documents: Sequence[ShardDocument]
) -> bool:
    """Write part n's documents (read, or failed) into its shard once, their ids claimed:
    a document whose id an earlier one holds fails as `duplicate_id`; the documents past
    the job's cap are not written, one `too_many_documents` document stands for them.
    False when nothing was written because the part was read already or the job is gone."""
    script = connection.script(store.r, "write_part")
    docs = list(documents)
    claimed = [d for d in docs if d.error_code is None]
    while True:
        counted = sum(1 for d in docs if d.error_code != TOO_MANY)
        args: list[Any] = [n, len(docs), pack_entries([d.entry() for d in docs])]
        args += [counted, part.most_documents()]
        for d in claimed:
            args += [d.id, d.index]
        reply = script(
            keys=[
                keys.job(job.id),
                keys.shard(job.id, n),
                keys.parts_read(job.id),
                keys.document_ids(job.id),
            ],
            args=args,
        )
        if int(reply[0]) == 3:  # past the cap: keep what fits, one document for the rest
            room, cap = int(reply[1]), int(reply[2])
            kept = [d for d in docs if d.error_code != TOO_MANY][:room]
            base = n * job.shard_size
            docs = [*kept, past_cap(job, part, base + len(kept), len(docs) - len(kept), cap)]
            kept_at = {d.index for d in kept}
            claimed = [d for d in claimed if d.index in kept_at]
            continue
        if int(reply[0]) != 2:
            return int(reply[0]) == 1
        taken = {int(i) for i in reply[1:]}
        docs = [_duplicate(d) if d.index in taken else d for d in docs]
        claimed = [d for d in claimed if d.index not in taken]


TOO_MANY = "too_many_documents"


def past_cap(
    job: JobRecord, part: Part, index: int, dropped: int | None, cap: int
) -> ShardDocument:
    """The one failed document that stands for a part's documents past the job's cap
    (`dropped` of them; None: the part was not read at all), numbered `index`: its id
    names the object and the part's byte range (NDJSON), or the first file not read."""
    prefix = f"tenants/{job.tenant}/"
    if part.ndjson:
        obj = part.keys[0].removeprefix(prefix)
        name = f"{obj}@{part.start}-{part.end}"
        which = "the" if dropped is None else f"the last {dropped}"
        what = f"{which} documents of bytes [{part.start}, {part.end}) of {obj}"
    else:
        first = min(index % job.shard_size, len(part.keys) - 1)  # its position in the part
        name = part.keys[first].removeprefix(prefix)
        what = f"{len(part.keys) - first} files of the manifest from {name} on"
    doc = ShardDocument(index, name, "", "text/plain", state="failed")
    return dataclasses.replace(
        doc,
        error=f"not read: the job holds the most documents a manifest job may ({cap}, "
        f"DOCQ_MANIFEST_MAX_DOCUMENTS); {what} were not read",
        error_code=TOO_MANY,
    )


def room_left(store: JobStore, job: JobRecord) -> tuple[int, int] | None:
    """(documents that still fit under the job's cap, the cap); None: no cap."""
    cap, read = store.r.hmget(keys.job(job.id), ["max_documents", "documents_read"])
    if not cap or int(cap) <= 0:
        return None
    return max(0, int(cap) - int(read or 0)), int(cap)


def _duplicate(d: ShardDocument) -> ShardDocument:
    return dataclasses.replace(
        d,
        content_type=d.content_type or "text/plain",
        state="failed",
        text="",
        error=f"another document of the job has the id {d.id!r}",
        error_code="duplicate_id",
    )


def job_extra(store: JobStore, job_id: str) -> dict[str, str]:
    """A manifest job's own fields: `manifest` (the tenant's objects URI), `results_key`,
    `results_files` (JSON list), `parts_read`."""
    names = ["manifest", "results_key", "results_files", "parts_read"]
    values = store.r.hmget(keys.job(job_id), names)
    got = zip(names, decode_values(values), strict=True)
    return {k: v for k, v in got if v is not None}


def set_results_files(store: JobStore, job_id: str, uris: Sequence[str]) -> None:
    """Record the results files written back (the webhook event and the status name them)."""
    store.r.hset(keys.job(job_id), "results_files", json.dumps(list(uris)))


def fail_part(store: JobStore, job: JobRecord, n: int, error: str) -> None:
    """Give part n, if it was never read (a worker gave up on it: the store unreachable
    past the retry budget), one failed document named after its object, so that the job's
    count and its results agree; nothing when it was read."""
    part = pending_part(store, job, n)
    if part is None:
        return
    name = part.keys[0].removeprefix(f"tenants/{job.tenant}/")
    doc = ShardDocument(n * job.shard_size, name, "", "text/plain", state="failed", error=error)
    doc = dataclasses.replace(doc, error_code="unreadable")
    write_part(store, job, n, part, [doc])
