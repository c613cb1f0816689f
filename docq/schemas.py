"""The public v1 schemas, split by direction (what comes in, what goes out)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Discriminator, Field, PrivateAttr, Tag

from docq.blobs.base import BlobRef
from docq.jobs import Attempt, DeliveryState, EventType, JobRecord, JobStatus, WebhookRecord

# --- in --------------------------------------------------------------------------


class DocumentIn(BaseModel):
    """One document of an upload."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=False)

    id: str = Field(min_length=1, max_length=512)
    text: str = Field(min_length=1)


class FileDocumentIn(BaseModel):
    """One document of an upload given as a file: its bytes in base64 and its content type
    (PDF, PNG, JPEG, TIFF, DOCX, HTML or plain text); a file whose bytes are not that type
    (or empty, or of no type docq reads) is accepted as a failed document (api/files.py)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=512)
    # Decoded (strictly) by the API after validation, and checked against its size cap
    # and its type there: a str here keeps the schema's errors those of JSON.
    # (empty allowed: an empty file is a failed document, `empty`, not a malformed request)
    content: str = Field(description="The file's bytes, base64 (RFC 4648, with padding).")
    content_type: str = Field(
        min_length=1,
        max_length=256,
        description="application/pdf, image/png, image/jpeg, image/tiff, application/vnd."
        "openxmlformats-officedocument.wordprocessingml.document, text/html or text/plain.",
    )
    # The file's bytes once the API has decoded and checked them (api/files.py), or the
    # blob a multipart file streamed into (api/streaming.py), or why the file is bad
    # (`code`, `message`: the document is accepted as failed); never part of the schema.
    _data: bytes | BlobRef | None = PrivateAttr(None)
    _failure: tuple[str, str] | None = PrivateAttr(None)

    @property
    def data(self) -> bytes | BlobRef | None:
        return self._data

    @property
    def failure(self) -> tuple[str, str] | None:
        return self._failure


# The tags name a document's form; untagged() takes them out of error locations again, so
# that errors of a text document read exactly as before files existed.
TEXT_FORM, FILE_FORM = "text-document", "file-document"


def untagged(loc: list[Any]) -> list[Any]:
    """A pydantic error location without the document form's tag."""
    return [part for part in loc if part not in (TEXT_FORM, FILE_FORM)]


def _form(value: Any) -> str:
    """A document with `content` is a file; every other one (even one that is no object,
    to be refused as before) is a text document."""
    if isinstance(value, FileDocumentIn) or (isinstance(value, dict) and "content" in value):
        return FILE_FORM
    return TEXT_FORM


Document = Annotated[
    Annotated[DocumentIn, Tag(TEXT_FORM)] | Annotated[FileDocumentIn, Tag(FILE_FORM)],
    Discriminator(_form),
]


class WebhookIn(BaseModel):
    """Where to send the job's event; docq generates the secret when none is given."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, max_length=2048)
    secret: str | None = Field(None, min_length=1, max_length=256)


class JobCreate(BaseModel):
    """A JSON upload: `{"model": ..., "documents": [...], "webhook": {"url", "secret"}}`;
    each document `{"id", "text"}`, or a file `{"id", "content", "content_type"}`."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(None, min_length=1, max_length=256)
    documents: list[Document] = Field(min_length=1)
    webhook: WebhookIn | None = None


class OnInvalid(StrEnum):
    """What an upload with bad documents (a file docq cannot read) becomes."""

    ACCEPT = "accept"  # the job runs; each bad document is a failed result (the default)
    REJECT = "reject"  # nothing is created: one 422 lists every bad document


# --- out -------------------------------------------------------------------------


class DocumentFailure(BaseModel):
    """A document accepted as failed (or, with on_invalid=reject, refused): which and why."""

    document: int = Field(description="Its position in the upload (from 0).")
    id: str
    error_code: str = Field(
        description="Why, the same vocabulary as a result's error_code: unsupported_type, "
        "type_mismatch, empty, not_utf8, too_large, no_text (at upload); unreadable, "
        "encrypted, truncated, too_many_pages, too_many_pixels, timeout (when read)."
    )
    message: str = Field(description="The problem, in words.")


class WebhookCreated(BaseModel):
    """The job's webhook as the upload answer shows it."""

    url: str
    secret: str | None = Field(
        None,
        description="The signing secret docq generated for this job: shown in this answer "
        "(and its idempotent replays) only. Null when the upload gave its own secret or the "
        "tenant's default webhook is used.",
    )


class JobCreated(BaseModel):
    """The 202 answer to an upload (200 when an Idempotency-Key replays an earlier one)."""

    id: str
    status: JobStatus
    model: str
    documents: int = Field(description="Documents in the job, the failed ones included.")
    documents_failed: int = Field(
        0,
        description="Of those, the ones accepted as failed (bad files): each has its result "
        "now or soon, with its error_code; the others are classified.",
    )
    failed: list[DocumentFailure] = Field(
        default_factory=list, description="The documents accepted as failed, in upload order."
    )
    created_at: datetime
    webhook: WebhookCreated | None = None


class Progress(BaseModel):
    documents_done: int = Field(description="Documents with a result (a label or an error).")
    documents_failed: int = Field(description="Documents that carry an error instead of a label.")


class PartsProgress(BaseModel):
    total: int = Field(description="Parts of the manifest's objects (a task each).")
    read: int = Field(description="Parts read so far: their documents are counted.")


class JobPublic(BaseModel):
    """A job's status, as polled and as sent in webhooks."""

    id: str
    status: JobStatus
    model: str
    documents: int
    progress: Progress
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    error: str | None
    parts: PartsProgress | None = Field(
        None,
        description="A job from object storage (a manifest): its parts, and how many were "
        "read; `documents` counts those found so far, final once every part is read.",
    )
    results_files: list[str] | None = Field(
        None, description="The NDJSON files of results written back when it ended (manifest)."
    )

    @classmethod
    def from_record(cls, job: JobRecord) -> JobPublic:
        return cls(
            id=job.id,
            status=job.status,
            model=job.model,
            documents=job.documents,
            progress=Progress(
                documents_done=job.documents_done, documents_failed=job.documents_failed
            ),
            created_at=job.created_at,
            started_at=job.started_at,
            finished_at=job.finished_at,
            error=job.error,
            parts=None
            if job.manifest is None
            else PartsProgress(total=job.shards, read=job.parts_read),
            results_files=None if job.results_files is None else list(job.results_files),
        )


class AttemptPublic(BaseModel):
    """One delivery attempt of a job's event."""

    attempt: int
    at: datetime
    duration_ms: float
    status_code: int | None = Field(description="The receiver's answer; null if none came.")
    error: str | None = Field(description="Why it failed (timeout, refused, status); null on 2xx.")

    @classmethod
    def from_attempt(cls, a: Attempt) -> AttemptPublic:
        return cls(
            attempt=a.attempt,
            at=a.at,
            duration_ms=a.duration_ms,
            status_code=a.status_code,
            error=a.error,
        )


class WebhookPublic(BaseModel):
    """A job's webhook and the delivery of its event (the secret is never shown)."""

    url: str
    state: DeliveryState
    event: EventType | None = Field(description="Set once the job is final.")
    webhook_id: str | None = Field(description="The `webhook-id` of every attempt.")
    delivered_at: datetime | None
    dead_lettered_at: datetime | None
    attempts: list[AttemptPublic]

    @classmethod
    def from_record(cls, record: WebhookRecord, attempts: list[Attempt]) -> WebhookPublic:
        return cls(
            url=record.url,
            state=record.state,
            event=record.event,
            webhook_id=record.webhook_id,
            delivered_at=record.delivered_at,
            dead_lettered_at=record.dead_lettered_at,
            attempts=[AttemptPublic.from_attempt(a) for a in attempts],
        )


class ResultsPage(BaseModel):
    """A page of results in upload order; `next_cursor` is null after the last document."""

    data: list[dict[str, Any]]
    next_cursor: str | None


class ModelPublic(BaseModel):
    """A model Triton serves (or can serve)."""

    name: str
    version: str | None = Field(description="The version served (or being loaded).")
    state: str = Field(
        description="available (not loaded yet), loading, ready, unloading, unloaded "
        "(loads again on next use) or failed (its last load failed: see reason)."
    )
    pinned: bool = Field(False, description="Never unloaded to make room for other models.")
    labels: list[str] | None = None
    max_seq_len: int | None = None
    max_batch_size: int | None = None
    runtime: str | None = None
    reason: str | None = None


class ModelsPublic(BaseModel):
    data: list[ModelPublic]
    count: int


class ErrorInfo(BaseModel):
    code: str
    message: str
    detail: Any = None


class ErrorBody(BaseModel):
    """Every error answer: `{"error": {"code", "message", "detail"}}`."""

    error: ErrorInfo
