"""The v1 API's answers as the client reads them: types of the JSON it returns as is.

The API declares these objects as pydantic models (docq/schemas.py, with the server's
store behind them); the client must install without the server, so it types the same JSON
here with the standard library alone. They are one contract, not two:
tests/client/test_models.py holds each TypedDict's JSON schema equal to the API's OpenAPI
schema of the same name, and the enums' values equal to the API's.

Every SDK call returns plain dicts (`json.dumps` writes them back unchanged; a datetime is
its ISO 8601 string); these types tell a type checker and a reader which keys they have.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, NotRequired

# typing's own TypedDict on 3.11 lacks what pydantic reads to hold these to the API's schema
from typing_extensions import TypedDict

# --- enums ---------------------------------------------------------------------


class JobStatus(StrEnum):
    """Where a job is in its life (the server's docq.jobs.JobStatus)."""

    QUEUED = "queued"  # accepted and stored; no shard started yet
    RUNNING = "running"  # at least one shard has started
    SUCCEEDED = "succeeded"  # every shard done and at least one document classified
    FAILED = "failed"  # every shard done and no document could be classified
    CANCELLED = "cancelled"  # cancelled by the client; shards not started are skipped

    @property
    def final(self) -> bool:
        return self in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)


class OnInvalid(StrEnum):
    """What an upload with bad documents (a file docq cannot read) becomes."""

    ACCEPT = "accept"  # the job runs; each bad document is a failed result (the default)
    REJECT = "reject"  # nothing is created: one 422 lists every bad document


# --- answers -------------------------------------------------------------------


class DocumentFailure(TypedDict):
    """A document accepted as failed (or, with on_invalid=reject, refused): which and why."""

    document: int  # its position in the upload, from 0
    id: str
    error_code: str  # unsupported_type, type_mismatch, empty, ... (a result's vocabulary)
    message: str


class WebhookCreated(TypedDict):
    """The job's webhook as the upload answer shows it (`secret`: the one docq generated)."""

    url: str
    secret: NotRequired[str | None]


class JobCreated(TypedDict):
    """The 202 answer to an upload (200 when an Idempotency-Key replays an earlier one)."""

    id: str
    status: JobStatus
    model: str
    documents: int
    documents_failed: NotRequired[int]
    failed: NotRequired[list[DocumentFailure]]
    created_at: str
    webhook: NotRequired[WebhookCreated | None]


class Progress(TypedDict):
    """A job's documents done so far (classified or failed) and, of those, failed."""

    documents_done: int
    documents_failed: int


class PartsProgress(TypedDict):
    """A job from object storage: its manifest's parts (a task each), and how many were read."""

    total: int
    read: int


class JobPublic(TypedDict):
    """A job's status, as polled (`GET /v1/jobs/{id}`) and as sent in webhooks."""

    id: str
    status: JobStatus
    model: str
    documents: int
    progress: Progress
    created_at: str
    started_at: str | None
    finished_at: str | None
    error: str | None
    parts: NotRequired[PartsProgress | None]  # a job from object storage (docs/manifests.md)
    results_files: NotRequired[list[str] | None]  # the results written back, once final


class ResultsPage(TypedDict):
    """A page of results in upload order; `next_cursor` is null after the last document."""

    data: list[dict[str, Any]]
    next_cursor: str | None


class ModelPublic(TypedDict):
    """A model Triton serves (or can serve)."""

    name: str
    version: str | None
    state: str  # available, loading, ready, unloading, unloaded or failed
    pinned: NotRequired[bool]
    labels: NotRequired[list[str] | None]
    max_seq_len: NotRequired[int | None]
    max_batch_size: NotRequired[int | None]
    runtime: NotRequired[str | None]
    reason: NotRequired[str | None]


class ModelsPublic(TypedDict):
    data: list[ModelPublic]
    count: int


class ErrorInfo(TypedDict):
    code: str
    message: str
    detail: NotRequired[Any]


class ErrorBody(TypedDict):
    """Every error answer: `{"error": {"code", "message", "detail"}}`."""

    error: ErrorInfo
