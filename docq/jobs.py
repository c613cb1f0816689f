"""Job states, the job record and its webhook delivery record, as stored in Redis."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

DEFAULT_TENANT = "default"  # the one tenant while auth is off, and of jobs made before it


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
    priority: bool = False  # in the small-job lane: its own queue, higher Triton priority
    tenant: str = DEFAULT_TENANT  # who created it: only that tenant's keys see the job
    files: int = 0  # documents uploaded as files: its shards are read (extracted) first
    # a job from object storage (docq/manifests.py): the URI of its tenant's objects
    manifest: str | None = None
    parts_read: int = 0  # of a manifest job's parts (shards), those read so far
    results_files: tuple[str, ...] | None = None  # written back when it ended (URIs)

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
            priority=h.get("lane") == "priority",
            tenant=h.get("tenant", DEFAULT_TENANT),
            files=int(h.get("files", 0)),
            manifest=h.get("manifest") or None,
            parts_read=int(h.get("parts_read", 0)),
            results_files=tuple(json.loads(h["results_files"])) if "results_files" in h else None,
        )


class EventType(StrEnum):
    """The one event a job's webhook receives, when the job becomes final."""

    SUCCEEDED = "job.succeeded"
    FAILED = "job.failed"
    CANCELLED = "job.cancelled"

    @classmethod
    def of(cls, status: JobStatus) -> EventType:
        return cls(f"job.{status.value}")


class DeliveryState(StrEnum):
    """Where a job's webhook event is."""

    WAITING = "waiting"  # the job is not final yet: there is no event to send
    PENDING = "pending"  # the event exists; an attempt is due or a retry is scheduled
    DELIVERED = "delivered"  # the receiver answered 2xx
    FAILED = "failed"  # a final answer (4xx other than 429, a redirect) or a refused URL
    DEAD_LETTERED = "dead_lettered"  # every attempt failed with a retryable error

    @property
    def final(self) -> bool:
        return self in (DeliveryState.DELIVERED, DeliveryState.FAILED, DeliveryState.DEAD_LETTERED)


@dataclass(frozen=True, slots=True)
class Attempt:
    """One delivery attempt."""

    attempt: int  # 1-based, counted over every round (redeliveries continue the count)
    at: datetime
    duration_ms: float
    status_code: int | None  # None when no answer came (timeout, refused, DNS, SSRF guard)
    error: str | None  # None for a 2xx

    def to_json(self) -> str:
        return json.dumps(
            {
                "attempt": self.attempt,
                "at": self.at.timestamp(),
                "duration_ms": self.duration_ms,
                "status_code": self.status_code,
                "error": self.error,
            }
        )

    @classmethod
    def from_json(cls, raw: str | bytes) -> Attempt:
        d = json.loads(raw)
        return cls(
            attempt=int(d["attempt"]),
            at=datetime.fromtimestamp(float(d["at"]), UTC),
            duration_ms=float(d["duration_ms"]),
            status_code=d["status_code"],
            error=d["error"],
        )


@dataclass(frozen=True, slots=True)
class WebhookRecord:
    """A job's webhook and the delivery of its event."""

    url: str
    secret: str
    secret_generated: bool  # docq made the secret; idempotent replays of the upload show it
    state: DeliveryState
    event: EventType | None  # set when the job becomes final
    webhook_id: str | None  # stable for the event: every attempt and redelivery reuse it
    round: int  # 1, then +1 per redelivery
    round_attempts: int  # attempts made in the current round
    token: str | None  # the delivery chain that owns the current round
    payload: str | None  # the event body, frozen at the first attempt
    delivered_at: datetime | None
    dead_lettered_at: datetime | None

    @classmethod
    def from_redis(cls, h: dict[str, str]) -> WebhookRecord:
        def ts(name: str) -> datetime | None:
            v = h.get(name)
            return datetime.fromtimestamp(float(v), UTC) if v else None

        event = h.get("event")
        return cls(
            url=h["url"],
            secret=h["secret"],
            secret_generated=h.get("secret_generated") == "1",
            state=DeliveryState(h.get("state", DeliveryState.WAITING.value)),
            event=EventType(event) if event else None,
            webhook_id=h.get("webhook_id") or None,
            round=int(h.get("round", 0)),
            round_attempts=int(h.get("round_attempts", 0)),
            token=h.get("token") or None,
            payload=h.get("payload") or None,
            delivered_at=ts("delivered_at"),
            dead_lettered_at=ts("dead_lettered_at"),
        )
