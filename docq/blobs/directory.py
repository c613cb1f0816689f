"""The blob store in a directory: the default (`file://` URL), on one host or on a volume
that every API and worker pod mounts (deploy/k8s: a ReadWriteMany PersistentVolumeClaim).

A blob is written to `.partial/` and renamed into place at commit (a rename is atomic on
one file system), after an fsync: a blob is there whole or not at all, also after a crash.
Names `<upload>/<part>` become a folder per upload, removed with its last blob.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from docq.blobs.base import BlobRef, Digesting
from docq.errors import BlobStoreUnavailable

PARTIAL = ".partial"


def _unavailable(what: str, exc: OSError) -> BlobStoreUnavailable:
    return BlobStoreUnavailable(f"blob store: could not {what}: {exc.strerror or exc}", str(exc))


class DirectoryWriter(Digesting):
    def __init__(self, store: DirectoryStore, key: str) -> None:
        super().__init__(key)
        self.store = store
        self.partial = store.root / PARTIAL / uuid.uuid4().hex
        self._file: BinaryIO | None = None

    def write(self, data: bytes) -> None:
        try:
            if self._file is None:
                self.partial.parent.mkdir(parents=True, exist_ok=True)
                self._file = open(self.partial, "wb")  # noqa: SIM115 (closed at commit/abort)
            self._file.write(data)
        except OSError as exc:
            self.abort()
            raise _unavailable(f"write {self.key}", exc) from exc
        self._count(data)

    def commit(self) -> BlobRef:
        if self._file is None:
            self.write(b"")
        assert self._file is not None
        target = self.store.path(self.key)
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.replace(self.partial, target)
            except FileNotFoundError:  # the sweep removed the upload's empty folder meanwhile
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(self.partial, target)
        except OSError as exc:
            self.abort()
            raise _unavailable(f"store {self.key}", exc) from exc
        return self._ref()

    def abort(self) -> None:
        if self._file is not None:
            self._file.close()
        with contextlib.suppress(OSError):
            self.partial.unlink(missing_ok=True)


class DirectoryStore:
    """Blobs as files under `root` (made on first write)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.url = root.as_uri()

    def path(self, key: str) -> Path:
        upload, _, part = key.partition("/")
        if not upload or not part or "/" in part or upload.startswith(".") or ".." in key:
            raise ValueError(f"not a blob name: {key!r}")
        return self.root / upload / part

    def writer(self, key: str) -> DirectoryWriter:
        self.path(key)  # a bad name fails before anything is written
        return DirectoryWriter(self, key)

    def get(self, key: str) -> bytes | None:
        try:
            return self.path(key).read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _unavailable(f"read {key}", exc) from exc

    def delete(self, keys: Sequence[str]) -> None:
        for key in keys:
            path = self.path(key)
            try:
                path.unlink(missing_ok=True)
            except OSError as exc:
                raise _unavailable(f"delete {key}", exc) from exc
            with contextlib.suppress(OSError):  # not empty yet, or gone: either is fine
                path.parent.rmdir()

    def older_than(self, before: float) -> Iterator[str]:
        try:
            uploads = [e for e in os.scandir(self.root) if not e.name.startswith(".")]
        except FileNotFoundError:
            return
        except OSError as exc:
            raise _unavailable("list the blobs", exc) from exc
        for upload in uploads:
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):  # swept meanwhile
                for blob in os.scandir(upload.path):
                    with contextlib.suppress(FileNotFoundError):
                        if blob.stat().st_mtime < before:
                            yield f"{upload.name}/{blob.name}"

    def drop_partial(self, before: float) -> int:
        dropped = 0
        with contextlib.suppress(FileNotFoundError):
            for entry in os.scandir(self.root / PARTIAL):
                with contextlib.suppress(FileNotFoundError):
                    if entry.stat().st_mtime < before:
                        os.unlink(entry.path)
                        dropped += 1
        return dropped
