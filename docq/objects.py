"""Tenants' objects that manifest jobs read (docs/manifests.md): a directory or an S3 bucket.

Unlike the blob store (docq.blobs: docq's own copies of uploaded files, deleted once read
and swept when orphaned), these objects are the tenant's: docq reads them (whole, or a
byte range of an NDJSON object), lists a prefix, and writes results back under a URI the
tenant names; it never deletes one. One setting names the store (DOCQ_MANIFEST_URL);
each tenant sees only `tenants/<tenant>/` of it (`Scope`): a key is resolved under that
prefix, and a URI outside it is refused before anything is created.

Every failure of the store itself raises BlobStoreUnavailable (retryable); a missing
object is None.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from docq.blobs import DirectoryStore, from_url
from docq.errors import BlobStoreUnavailable, ForbiddenObject

if TYPE_CHECKING:
    from docq.blobs.s3 import S3Store
    from docq.config import Settings


class Objects(Protocol):
    """Read, list and write objects by key (a path under the store's root or prefix)."""

    url: str  # the store's root (file:///... or s3://bucket/prefix/), for URIs

    def size(self, key: str) -> int | None:
        """The object's size in bytes; None when there is no such object."""
        ...

    def read(self, key: str, start: int = 0, end: int | None = None) -> bytes | None:
        """Bytes [start, end) of the object (end None: to its end); None when it is gone."""
        ...

    def list(self, prefix: str) -> Iterator[tuple[str, int]]:
        """(key, size) of every object whose key starts with `prefix`, in key order."""
        ...

    def write(self, key: str, data: bytes) -> None: ...


def _unavailable(what: str, exc: Exception) -> BlobStoreUnavailable:
    return BlobStoreUnavailable(f"object store: could not {what}: {exc}", str(exc))


class DirectoryObjects:
    """Objects as files under `root` (a key is a relative path)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.url = root.as_uri() + "/"

    def size(self, key: str) -> int | None:
        try:
            return (self.root / key).stat().st_size
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise _unavailable(f"stat {key}", exc) from exc

    def read(self, key: str, start: int = 0, end: int | None = None) -> bytes | None:
        try:
            with open(self.root / key, "rb") as f:
                f.seek(start)
                return f.read() if end is None else f.read(max(0, end - start))
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except OSError as exc:
            raise _unavailable(f"read {key}", exc) from exc

    def list(self, prefix: str) -> Iterator[tuple[str, int]]:
        base = self.root / prefix.rpartition("/")[0]
        found: list[tuple[str, int]] = []
        try:
            for folder, _, names in os.walk(base):
                for name in names:
                    path = Path(folder) / name
                    key = path.relative_to(self.root).as_posix()
                    if key.startswith(prefix):
                        found.append((key, path.stat().st_size))
        except OSError as exc:
            raise _unavailable(f"list {prefix}", exc) from exc
        yield from sorted(found)

    def write(self, key: str, data: bytes) -> None:
        path = self.root / key
        partial = path.with_name(f".{path.name}.partial")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial.write_bytes(data)
            partial.replace(path)  # whole or not at all
        except OSError as exc:
            raise _unavailable(f"write {key}", exc) from exc


class S3Objects:
    """Objects under the prefix of an S3 bucket, through the S3Store's client (boto3)."""

    def __init__(self, store: S3Store) -> None:
        self.s3 = store
        self.url = store.url

    def _missing(self, exc: Exception) -> bool:
        code = getattr(exc, "response", {}).get("Error", {}).get("Code")
        return code in ("NoSuchKey", "404", "NotFound")

    def size(self, key: str) -> int | None:
        try:
            head = self.s3.client().head_object(Bucket=self.s3.bucket, Key=self.s3.name(key))
            return int(head["ContentLength"])
        except self.s3.errors as exc:
            if self._missing(exc):
                return None
            raise _unavailable(f"stat {key}", exc) from exc

    def read(self, key: str, start: int = 0, end: int | None = None) -> bytes | None:
        if end is not None and end <= start:
            return b""
        ranged = {} if start == 0 and end is None else {"Range": f"bytes={start}-{_last(end)}"}
        try:
            got = self.s3.client().get_object(
                Bucket=self.s3.bucket, Key=self.s3.name(key), **ranged
            )
            return got["Body"].read()  # type: ignore[no-any-return]
        except self.s3.errors as exc:
            if self._missing(exc):
                return None
            if getattr(exc, "response", {}).get("Error", {}).get("Code") == "InvalidRange":
                return b""  # a range past its end: the object shrank, nothing there
            raise _unavailable(f"read {key}", exc) from exc

    def list(self, prefix: str) -> Iterator[tuple[str, int]]:
        pages = self.s3.client().get_paginator("list_objects_v2")
        skip = len(self.s3.prefix)
        try:
            for page in pages.paginate(Bucket=self.s3.bucket, Prefix=self.s3.name(prefix)):
                for obj in page.get("Contents", []):
                    yield obj["Key"][skip:], int(obj["Size"])
        except self.s3.errors as exc:
            raise _unavailable(f"list {prefix}", exc) from exc

    def write(self, key: str, data: bytes) -> None:
        try:
            self.s3.client().put_object(Bucket=self.s3.bucket, Key=self.s3.name(key), Body=data)
        except self.s3.errors as exc:
            raise _unavailable(f"write {key}", exc) from exc


def _last(end: int | None) -> str:
    return "" if end is None else str(end - 1)  # HTTP ranges name their last byte


def open_objects(settings: Settings) -> Objects:
    """The object store the settings name (DOCQ_MANIFEST_URL; empty: .run/objects)."""
    from docq.config.manifests import LOCAL_OBJECTS

    store = from_url(settings.manifest_url or LOCAL_OBJECTS.as_uri(), settings)
    if isinstance(store, DirectoryStore):
        return DirectoryObjects(store.root)
    return S3Objects(store)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Scope:
    """What one tenant may read and write: the keys under `tenants/<tenant>/`."""

    objects: Objects
    tenant: str

    @property
    def prefix(self) -> str:
        return f"tenants/{self.tenant}/"

    def key(self, name: str) -> str:
        """The store key a manifest's name means: a key relative to the tenant's prefix
        (`batch-1/a.ndjson`), or a full URI under it (`s3://bucket/prefix/tenants/<tenant>/
        batch-1/a.ndjson`). ForbiddenObject for anything else: another tenant's objects,
        another store, `..`."""
        rel = name
        if "://" in name:
            if not name.startswith(self.objects.url + self.prefix):
                raise ForbiddenObject(
                    f"{name!r} is not under this tenant's objects, {self.uri('')}",
                    {"object": name, "allowed": self.uri("")},
                )
            rel = name[len(self.objects.url + self.prefix) :]
        parts = rel.split("/")
        if not rel or rel.startswith("/") or any(p in (".", "..") for p in parts):
            raise ForbiddenObject(f"{name!r} is not an object name docq reads", {"object": name})
        if any(c in rel for c in "\\\x00"):
            raise ForbiddenObject(f"{name!r} is not an object name docq reads", {"object": name})
        return self.prefix + rel

    def uri(self, key: str) -> str:
        """The URI of a key relative to the tenant's prefix (what results name)."""
        return self.objects.url + self.prefix + key
