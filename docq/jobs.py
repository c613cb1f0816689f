"""Job states and the job record as stored in Redis."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum


class JobStatus(StrEnum):
    """Where a job is in its life."""

    QUEUED = "queued"  # accepted and stored; no shard started yet
    RUNNING = "running"  # at least one shard has started
    SUCCEEDED = "succeeded"  # every shard done and at least one document classified
    FAILED = "failed"  # every shard done and no document could be classified
    CANCELLED = "cancelled"  # cancelled by the client; shards not started are skipped

    @property
    def final(self) -> bool:
        return self in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class JobRecord:
    """A job as the store knows it."""

    id: str
    model: str
    status: JobStatus
    documents: int
    shards: int
    shard_size: int
    documents_done: int  # documents with a result, classified or failed
    documents_failed: int  # of those, the ones that carry an error instead of a label
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    error: str | None

    @classmethod
    def from_redis(cls, h: dict[str, str]) -> JobRecord:
        def ts(name: str) -> datetime | None:
            v = h.get(name)
            return datetime.fromtimestamp(float(v), UTC) if v else None

        created = ts("created_at")
        assert created is not None, "a job record always has created_at"
        return cls(
            id=h["id"],
            model=h["model"],
            status=JobStatus(h["status"]),
            documents=int(h["documents"]),
            shards=int(h["shards"]),
            shard_size=int(h["shard_size"]),
            documents_done=int(h.get("documents_done", 0)),
            documents_failed=int(h.get("documents_failed", 0)),
            created_at=created,
            started_at=ts("started_at"),
            finished_at=ts("finished_at"),
            error=h.get("error") or None,
        )
