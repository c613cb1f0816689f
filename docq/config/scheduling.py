"""Settings: which shards run first, and how a worker fills Triton's batches."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Scheduling(BaseModel):
    """Settings: the priority lane, the bulk lanes and batching."""

    small_job_max_documents: int = Field(
        16,
        description="Jobs of at most this many documents take the priority lane: their own "
        "queue and worker, and a higher Triton request priority, so a 3-document job never "
        "waits for a 20,000-document one. Raising it lets bigger jobs overtake bulk work; 0 "
        "turns the lane off.",
    )
    bulk_lanes: int = Field(
        8,
        ge=1,
        description="Bulk queues (`cpu.0` ... ) that tenants are hashed onto; bulk workers take "
        "turns among them, so one tenant's backlog holds another's shards back by at most one "
        "shard per worker thread. More lanes make two tenants sharing one (and its FIFO) "
        "rarer, for more lists polled per BRPOP and one KEDA trigger each (deploy/k8s/keda.yaml "
        "lists them). Lowering it strands shards queued in the lanes dropped: drain them first.",
    )
    batch_max_wait_ms: float = Field(
        5.0,
        ge=0,
        description="Longest a worker holds a partial batch for windows of other shards. "
        "Longer fills more batches from small jobs, and adds up to this to their latency; "
        "full batches never wait.",
    )
    batch_max_queued_windows: int = Field(
        4096,
        ge=1,
        description="Windows a worker process queues for batching before its shards wait "
        "to add more (memory bound; backpressure when Triton falls behind).",
    )
