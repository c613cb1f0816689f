"""Settings: jobs in the job store: how an upload is cut into shards and how long it is kept."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Jobs(BaseModel):
    """Settings: shards, retention and the stored documents."""

    shard_size: int = Field(
        64,
        ge=1,
        description="Documents per shard (one Celery task). Smaller shards spread a job over "
        "more workers and lose less work on a crash; larger ones cost fewer round trips.",
    )
    job_ttl_s: int = Field(
        7 * 24 * 3600,
        ge=1,
        description="How long jobs, documents and results are kept (retention).",
    )
    accept_head_shards: int = Field(
        16,
        ge=0,
        description="Shards of a larger text upload stored and enqueued first, in a write of "
        "their own, so that workers start on them while the API stores the rest (the job is "
        "listed, and its 202 sent, only once all of it is stored). More keeps more workers "
        "busy meanwhile and delays their start by its share of the storing; 0 stores every "
        "upload in one write before any shard is enqueued.",
    )
    keep_documents: bool = Field(
        False,
        description="Keep a shard's documents until the job expires. Off deletes them as soon "
        "as their results are written (less data held, less memory); a redelivered finished "
        "shard is then skipped instead of re-run.",
    )
