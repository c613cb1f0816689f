"""Settings: how work survives crashes and outages: redelivery, leases, sweeps and retries."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Recovery(BaseModel):
    """Settings: redelivery, shard leases, sweeps, stalls and retry budgets."""

    visibility_timeout_s: int = Field(
        3600,
        description="Redis redelivers an unacknowledged task after this long. Must exceed the "
        "slowest shard, or a slow shard runs twice (harmless, but wasted).",
    )
    worker_stall_s: float = Field(
        60.0,
        ge=0,
        description="A worker that holds no task while its queues have messages, and took "
        "none for this long, restarts its broker connection (Celery's Redis consumer can come "
        "back from a lost connection and never read again); still stalled as long again, it "
        "shuts down for its supervisor to start it afresh. 0: never. Shorter resumes sooner "
        "after such a stall; it must exceed the longest pause between a queue's message and "
        "its receipt.",
    )
    task_retry_budget_s: float = Field(
        1800.0,
        ge=0,
        description="How long a shard keeps retrying retryable errors (Triton or Redis "
        "unavailable), from its first failure, before its documents are marked failed. "
        "Longer rides out longer outages; a shard that can never succeed holds its job open "
        "that long.",
    )
    shard_lease_s: float = Field(
        30.0,
        gt=0,
        description="A running shard's lease, renewed by its worker every third of it; a "
        "shard whose lease expired (its worker died) is enqueued again by a sweeper, and a "
        "job whose shards were never enqueued is swept after this long. Shorter resumes "
        "sooner after a crash; too short for a stalled but live worker runs a shard twice "
        "(harmless: its second answer is discarded).",
    )
    sweep_interval_s: float = Field(
        5.0,
        gt=0,
        description="How often each shard worker sweeps for expired leases and unenqueued "
        "jobs. Shorter resumes sooner, for one small Redis query per worker and interval.",
    )
    audit_interval_s: float = Field(
        30.0,
        gt=0,
        description="How often each unfinished job is checked for shards found nowhere (no "
        "result, lease, queued or unacknowledged message: a worker killed as it took the "
        "message from Redis); one still missing at the next check is enqueued again. "
        "Shorter recovers sooner, for a read of the job's queue per job and interval.",
    )
    task_retry_backoff_s: int = Field(
        2, description="First retry delay; doubles each attempt (Celery backoff, with jitter)."
    )
    task_retry_backoff_max_s: int = Field(120, description="Cap on one retry delay.")
