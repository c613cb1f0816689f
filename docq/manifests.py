"""Jobs from object storage: a manifest names objects; workers read them (docs/manifests.md).

A manifest job is cut into parts before the 202 without reading a document: an NDJSON
object (`.ndjson`, `.jsonl`: one `{"id", "text"}` a line, as Batch Transform splits by
line) into byte ranges of `manifest_part_bytes`, other objects (a file each: text, PDF,
scan, DOCX, HTML) into groups of `shard_size`. A part is a shard of the job whose stored
form is its reference (`Part`) until a worker reads it (workers/objects.py).

Documents are numbered `part * stride + k` (k: the document's position in its part), the
stride being the most documents a part can hold (`manifest_part_bytes`: a line starts at a
distinct byte): results come in manifest order, and a part read twice numbers its
documents the same. The count of documents is known once every part is read; until
then the job's `documents` counts those found so far.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from docq.errors import PayloadTooLarge, ValidationError
from docq.objects import Scope
from docq.schemas import WebhookIn

NDJSON_SUFFIXES = (".ndjson", ".jsonl")
# The job's first NDJSON part is this short (a few dozen documents), so that its first
# results come in seconds, whatever the part size; the rest are `manifest_part_bytes`.
FIRST_PART_BYTES = 4096


class ManifestIn(BaseModel):
    """What to read: `objects` (names or URIs) or a `prefix` (every object under it)."""

    model_config = ConfigDict(extra="forbid")

    objects: list[str] | None = Field(None, min_length=1)
    prefix: str | None = Field(None, min_length=1, max_length=1024)

    @model_validator(mode="after")
    def _one(self) -> ManifestIn:
        if (self.objects is None) == (self.prefix is None):
            raise ValueError("a manifest names either `objects` or a `prefix`")
        return self


class ManifestJobCreate(BaseModel):
    """`POST /v1/jobs` with a manifest instead of documents: `{"model", "manifest":
    {"objects": [...]} | {"prefix": "..."}, "results": "out/", "webhook": {...}}`."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(None, min_length=1, max_length=256)
    manifest: ManifestIn
    results: str | None = Field(
        None,
        min_length=1,
        max_length=1024,
        description="Where to write the results back, as NDJSON files, when the job ends "
        "(a prefix in the tenant's objects); the webhook event names the files.",
    )
    webhook: WebhookIn | None = None


@dataclass(frozen=True, slots=True)
class Part:
    """One shard of a manifest job before it is read: a byte range of an NDJSON object, or
    a group of file objects (each one document)."""

    keys: tuple[str, ...]  # store keys: one NDJSON object, or the files of the group
    start: int = 0
    end: int = 0
    ndjson: bool = False

    def most_documents(self) -> int:
        """The most documents this part can hold: one per file; for an NDJSON range, one
        per line starting in it (a line takes a byte and its newline: half the range,
        rounded up), and at least one (a `missing` or `unreadable` object's document)."""
        if not self.ndjson:
            return len(self.keys)
        return max(1, (self.end - self.start + 1) // 2)

    def spec(self) -> dict[str, Any]:
        if self.ndjson:
            return {"ndjson": self.keys[0], "start": self.start, "end": self.end}
        return {"files": list(self.keys)}

    @classmethod
    def from_spec(cls, d: dict[str, Any]) -> Part:
        if "ndjson" in d:
            return cls((d["ndjson"],), int(d["start"]), int(d["end"]), ndjson=True)
        return cls(tuple(d["files"]))


def is_ndjson(key: str) -> bool:
    return key.lower().endswith(NDJSON_SUFFIXES)


def objects_of(manifest: ManifestIn, scope: Scope, max_objects: int) -> list[tuple[str, int]]:
    """(store key, size) of each object the manifest names, after checking each is the
    tenant's (ForbiddenObject), exists (ValidationError listing the missing ones) and that
    there are at most `max_objects` (PayloadTooLarge). Sizes come from HEAD or the listing:
    no object is read."""
    if manifest.prefix is not None:
        found: list[tuple[str, int]] = []
        for key, size in scope.objects.list(scope.key(manifest.prefix)):
            if len(found) == max_objects:
                raise _too_many(max_objects)
            if not key.endswith("/"):  # (an S3 console's folder marker)
                found.append((key, size))
        if not found:
            raise ValidationError(
                f"no object under {manifest.prefix!r}", {"field": "manifest.prefix"}
            )
        return found
    names = manifest.objects or []
    if len(names) > max_objects:
        raise _too_many(max_objects)
    keys = [scope.key(name) for name in names]
    if len(set(keys)) < len(keys):
        raise ValidationError("the manifest names an object twice", {"field": "manifest.objects"})
    sizes = [scope.objects.size(key) for key in keys]
    missing = [name for name, size in zip(names, sizes, strict=True) if size is None]
    if missing:
        raise ValidationError(
            f"{len(missing)} objects of the manifest do not exist, the first {missing[0]!r}",
            {"field": "manifest.objects", "missing": missing[:100]},
        )
    return [(k, s) for k, s in zip(keys, sizes, strict=True) if s is not None]


def _too_many(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"a manifest may name at most {limit} objects", {"limit": limit})


def plan(objects: Iterable[tuple[str, int]], part_bytes: int, group: int) -> list[Part]:
    """The parts of a manifest's objects, in manifest order: each NDJSON object in byte
    ranges of `part_bytes` (the job's first one FIRST_PART_BYTES at most; an empty object
    as one empty part), files in groups of `group`."""
    parts: list[Part] = []
    step = min(part_bytes, FIRST_PART_BYTES)
    files: list[str] = []
    for key, size in objects:
        if not is_ndjson(key):
            files.append(key)
            if len(files) == group:
                parts.append(Part(tuple(files)))
                files = []
            continue
        if files:
            parts.append(Part(tuple(files)))
            files = []
        start = 0
        while start == 0 or start < size:
            parts.append(Part((key,), start, min(start + step, size), ndjson=True))
            start += step
            step = part_bytes
    if files:
        parts.append(Part(tuple(files)))
    return parts


def lines(data: bytes, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    """(offset, line) of each line that starts in [start, end) of an object, given its
    bytes `data` from `start` to (at least) the end of the line that crosses `end`: a
    range that does not start the object skips the line it starts inside of (the range
    before it reads that one). Blank lines are no documents."""
    pos = 0
    if start > 0:  # the line before ours ends at our first newline (data[0] is start-1)
        first = data.find(b"\n")
        if first < 0:
            return
        pos = first + 1
    limit = end - start + (1 if start > 0 else 0)  # data's offset of `end`
    while pos < limit and pos < len(data):
        nl = data.find(b"\n", pos)
        line = data[pos:] if nl < 0 else data[pos:nl]
        if line.strip():
            yield start - (1 if start > 0 else 0) + pos, line
        if nl < 0:
            return
        pos = nl + 1
