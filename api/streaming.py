"""A multipart upload's files streamed into the blob store as they arrive (docq.blobs), so
that the API's memory does not grow with an upload's size.

Each file part is written to a `BlobSpool` (the file object of starlette's UploadFile, which
writes it from a worker thread, off the event loop). Its first bytes tell its type
(docq.extract.sniff needs HEAD bytes for a PDF, a PNG, a JPEG or a TIFF): such a part
streams into the store from then on, keeping only those bytes, and is committed when the
part ends. Every other part is held whole, as before blobs, within `max_upload_bytes` for
the whole upload: text (it becomes a document's text), HTML, and a DOCX (a zip is told
from its directory, at its end); its bytes go to the store when the job is stored
(store/files.py). Blobs of an upload that is refused are deleted at once, while it is
parsed (`Spools.discard`) or after (`drop_unclaimed`: an unknown model, a tenant over its
limits, a replayed Idempotency-Key); whatever a crash or a failing store leaves is the
orphan sweep's (workers/orphans.py).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable

from docq.blobs import BlobRef, BlobStore, BlobWriter
from docq.errors import BlobStoreUnavailable, DocqError, PayloadTooLarge
from docq.extract import sniff
from docq.extract.base import JPEG, PDF, PNG, TIFF
from docq.extract.sniff import PDF_MAGIC, PDF_WINDOW
from docq.schemas import FileDocumentIn, JobCreate
from docq.store import JobStore

log = logging.getLogger(__name__)

STREAMED = frozenset({PDF, PNG, JPEG, TIFF})
HEAD = PDF_WINDOW + len(PDF_MAGIC)  # enough for sniff to tell every type of STREAMED


class Held:
    """The bytes of an upload's parts held in memory, capped at `limit` (413 past it)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0

    def take(self, n: int) -> None:
        self.size += n
        if self.size > self.limit:
            raise PayloadTooLarge(
                f"the upload's text, HTML and DOCX files are larger than {self.limit} bytes "
                "together (PDFs and images do not count: they stream to the blob store)",
                {"limit": self.limit, "field": "files"},
            )


class BlobSpool:
    """One file part: held until its first bytes tell it streams, then streamed to `key`."""

    def __init__(self, blobs: BlobStore, key: str, held: Held) -> None:
        self.blobs, self.key, self.held = blobs, key, held
        self.head = bytearray()  # the whole part while held; its first HEAD bytes once streamed
        self.size = 0
        self.ref: BlobRef | None = None
        self._writer: BlobWriter | None = None

    def _streams(self) -> bool:
        return sniff(bytes(self.head[:HEAD])) in STREAMED

    def write(self, data: bytes) -> int:
        n = len(data)
        self.size += n
        if self._writer is None and len(self.head) < HEAD:  # its type is not told yet
            first, data = data[: HEAD - len(self.head)], data[HEAD - len(self.head) :]
            self.held.take(len(first))
            self.head += first
            if len(self.head) == HEAD and self._streams():
                self._writer = self.blobs.writer(self.key)
                self._writer.write(bytes(self.head))
        if data and self._writer is not None:
            self._writer.write(data)
        elif data:
            self.held.take(len(data))
            self.head += data
        return n

    def seek(self, offset: int) -> int:
        """Starlette seeks to 0 once a part is whole: a streamed part is committed then (a
        short one, shorter than HEAD, is stored whole now)."""
        if self.ref is None and self._writer is None and self.head and self._streams():
            self._writer = self.blobs.writer(self.key)
            self._writer.write(bytes(self.head))
        if self._writer is not None and self.ref is None:
            self.ref = self._writer.commit()
        return offset

    def read(self, size: int = -1) -> bytes:
        """The part held whole, or the first HEAD bytes of one streamed (enough to judge
        its type: api/files.py); a streamed part's size is `size`."""
        return bytes(self.head)

    def close(self) -> None:
        if self._writer is not None and self.ref is None:
            self._writer.abort()


class Spools:
    """The spools of one upload, named `<upload>/<n>` (the upload's n-th file part)."""

    def __init__(self, blobs: BlobStore, held_limit: int) -> None:
        self.blobs = blobs
        self.upload = uuid.uuid4().hex
        self.held = Held(held_limit)
        self.made: list[BlobSpool] = []

    def new(self, n: int) -> BlobSpool:
        spool = BlobSpool(self.blobs, f"{self.upload}/{n}", self.held)
        self.made.append(spool)
        return spool

    def discard(self, keep: Iterable[BlobRef] = ()) -> None:
        """Delete the blobs this upload stored but for `keep` (those its job refers to);
        best effort: what a store failure leaves is the orphan sweep's."""
        kept = {ref.key for ref in keep}
        drop = [s.ref.key for s in self.made if s.ref is not None and s.ref.key not in kept]
        if not drop:
            return
        try:
            self.blobs.delete(drop)
        except BlobStoreUnavailable as exc:
            log.warning("%d blobs of a refused upload left to the sweep: %s", len(drop), exc)


def streamed(upload: JobCreate) -> list[BlobRef]:
    """The blobs a parsed upload streamed into the store (its PDFs and images)."""
    return [
        d.data
        for d in upload.documents
        if isinstance(d, FileDocumentIn) and isinstance(d.data, BlobRef)
    ]


def drop_unclaimed(store: JobStore, upload: JobCreate) -> None:
    """Delete the blobs of a parsed upload that no job refers to: one refused after it was
    parsed, or answered with the job an earlier upload made (same Idempotency-Key).

    Safe whatever happened: a blob name holds its upload's own id, so only this upload's
    job can refer to it, and a blob that job's file key refers to (the job was made after
    all) is kept. Best effort: with Redis or the store failing, the sweep deletes them."""
    refs = [ref.key for ref in streamed(upload)]
    if not refs or store.files.blobs is None:
        return
    try:
        drop = sorted(set(refs) - store.files.referenced(refs))
        if drop:
            store.files.blobs.delete(drop)
    except DocqError as exc:  # StoreUnavailable, BlobStoreUnavailable: the sweep's then
        log.warning("%d blobs of an upload that made no job left to the sweep: %s", len(refs), exc)
