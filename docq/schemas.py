"""The public v1 schemas, split by direction (what comes in, what goes out)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from docq.jobs import JobRecord, JobStatus

# --- in --------------------------------------------------------------------------


class DocumentIn(BaseModel):
    """One document of an upload."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=False)

    id: str = Field(min_length=1, max_length=512)
    text: str = Field(min_length=1)


class JobCreate(BaseModel):
    """A JSON upload: `{"model": ..., "documents": [...]}`."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(None, min_length=1, max_length=256)
    documents: list[DocumentIn] = Field(min_length=1)


# --- out -------------------------------------------------------------------------


class JobCreated(BaseModel):
    """The 202 answer to an upload."""

    id: str
    status: JobStatus
    model: str
    documents: int
    created_at: datetime


class Progress(BaseModel):
    documents_done: int = Field(description="Documents with a result (a label or an error).")
    documents_failed: int = Field(description="Documents that carry an error instead of a label.")


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
        )


class ResultsPage(BaseModel):
    """A page of results in upload order; `next_cursor` is null after the last document."""

    data: list[dict[str, Any]]
    next_cursor: str | None


class ModelPublic(BaseModel):
    """A model Triton serves (or can serve)."""

    name: str
    version: str | None
    state: str
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
