"""The fields of docq's settings, by area: each area a class, `docq.config.Settings` all of
them together (one object, validated once). Each setting says, where it is declared, what
it trades.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from docq.config_webhooks import Webhooks as Webhooks  # its own module: the area is long

REPO_ROOT = Path(__file__).resolve().parent.parent


class Places(BaseModel):
    """Settings: where things are."""

    redis_url: str = Field(
        "redis://127.0.0.1:6379/0",
        description="Job store (holds documents until their shard is done: size it for the "
        "largest backlog you accept): redis://, or sentinel:// Sentinels (config_redis.py).",
    )
    broker_url: str | None = Field(
        None,
        description="Celery broker; defaults to redis_url. A separate Redis isolates "
        "queue traffic from job-store traffic.",
    )
    triton_grpc_url: str = Field(
        "127.0.0.1:8001",
        description="Triton gRPC endpoint the workers and the API call, when "
        "triton_grpc_urls names none.",
    )
    triton_grpc_urls: str = Field(
        "",
        description="Comma-separated Triton gRPC endpoints (several servers share the load: "
        "each batch goes to the one with the fewest requests in flight, and a server that "
        "stops answering is left until its health check passes again). Empty: "
        "triton_grpc_url alone. More servers cost more GPUs; one alone stops every job "
        "when it dies.",
    )
    triton_health_interval_s: float = Field(
        2.0,
        description="How often a worker checks the readiness of each Triton endpoint. "
        "Shorter takes a restarted server back sooner, at the cost of one small gRPC call "
        "per endpoint and interval.",
    )
    triton_hold_s: float = Field(
        30.0,
        description="How long a batch that finds no Triton endpoint reachable (a server "
        "restarting, its models loading) waits for one to come back, sent again every half "
        "second, before its shard fails and is retried with Celery's backoff. Covers a "
        "supervisor's restart; 0 fails at once.",
    )
    triton_http_port: int = Field(8000, description="Port of the local tritonserver's HTTP API.")
    triton_grpc_port: int = Field(8001, description="Port of the local tritonserver's gRPC API.")
    triton_metrics_port: int = Field(8002, description="Port of the local tritonserver's metrics.")
    model_repository: Path = Field(
        REPO_ROOT / "model_repository",
        description="Triton model repository; workers read tokenizer and labels from it.",
    )
    default_model: str | None = Field(
        "doc-type", description="Model used when an upload names none; empty to require one."
    )


class Api(BaseModel):
    """Settings: API."""

    api_host: str = Field("127.0.0.1", description="API bind address.")
    api_port: int = Field(8080, description="API port (Triton owns 8000-8002, Flower 5555).")
    max_upload_bytes: int = Field(
        256 * 1024 * 1024,
        description="Largest JSON or NDJSON body, and the most of a multipart upload the API "
        "holds in memory (its text, HTML and DOCX parts: PDFs and images stream to the blob "
        "store, max_stored_upload_bytes). Larger gets 413 instead of filling memory.",
    )
    max_documents_per_job: int = Field(
        100_000, description="Most documents in one job; more gets 413 (split the upload)."
    )
    max_document_chars: int = Field(
        2_000_000,
        description="Longest document text. Long documents are windowed, never truncated, so "
        "this caps the inference cost one document can cause.",
    )
    results_page_max: int = Field(
        1000, description="Largest `limit` of a results page; a larger one gets 422."
    )
    max_parsing_uploads: int = Field(
        4,
        description="Uploads one API process parses at once (each in a worker thread, its "
        "body in memory); one more gets 429 with Retry-After. Higher admits more concurrent "
        "uploads for up to this many times max_upload_bytes of memory.",
    )


class Access(BaseModel):
    """Settings: tenants and access."""

    auth_enabled: bool = Field(
        True,
        description="Every /v1 request needs `Authorization: Bearer <key>` (`docq keys "
        "create`), and each tenant sees only its own jobs. Off: one anonymous tenant, "
        "anyone who reaches the API reads and cancels any job.",
    )
    api_key_secret: str = Field(
        "",
        description="Server secret keying the HMAC-SHA256 under which API keys are stored "
        "(the API and `docq keys` need the same one). Set, a copy of Redis cannot even "
        "confirm a guessed key; changing it invalidates every key.",
    )
    tenant_max_active_jobs: int = Field(
        100,
        description="Most queued or running jobs of one tenant; one more gets 429 with "
        "Retry-After. Lower keeps one tenant from filling the queue; too low makes clients "
        "that split uploads wait.",
    )
    tenant_max_queued_documents: int = Field(
        1_000_000,
        description="Most documents of one tenant not yet classified (its queued and "
        "running jobs); an upload past it gets 429 with Retry-After. Bounds the Redis memory "
        "one tenant can hold; must be at least max_documents_per_job.",
    )
    triton_admin_key: str = Field(
        "",
        description="Value of the `triton-admin-key` header Triton asks for on its model "
        "repository, model config, statistics, shared-memory, trace and logging APIs (HTTP "
        "and gRPC): set, the launcher restricts them and the API and workers send it; "
        "inference and health stay open. Empty: unrestricted (the local stack listens on "
        "loopback only); deployments must set it.",
    )
    flower_basic_auth: str = Field(
        "",
        description="`user:password` Flower asks for (comma-separate several). Empty: "
        "`make up` generates one in .run/flower-login; deployments must set it.",
    )


class JobStore(BaseModel):
    """Settings: job store."""

    shard_size: int = Field(
        64,
        description="Documents per shard (one Celery task). Smaller shards spread a job over "
        "more workers and lose less work on a crash; larger ones cost fewer round trips.",
    )
    job_ttl_s: int = Field(
        7 * 24 * 3600, description="How long jobs, documents and results are kept (retention)."
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


class Workers(BaseModel):
    """Settings: workers."""

    triton_max_in_flight: int = Field(
        4,
        description="gRPC requests a worker process keeps in flight. More keeps Triton's "
        "dynamic batcher fed; too many only queues inside Triton (backpressure stops here, "
        "and waiting windows fill fuller batches).",
    )
    batch_max_wait_ms: float = Field(
        5.0,
        description="Longest a worker holds a partial batch for windows of other shards. "
        "Longer fills more batches from small jobs, and adds up to this to their latency; "
        "full batches never wait.",
    )
    batch_max_queued_windows: int = Field(
        4096,
        description="Windows a worker process queues for batching before its shards wait "
        "to add more (memory bound; backpressure when Triton falls behind).",
    )
    worker_metrics_port: int = Field(
        0,
        description="Port of a worker process's Prometheus metrics (model load times, "
        "batches, padding, shard times). Each worker process needs its own; 0 serves none.",
    )
    worker_metrics_host: str = Field("127.0.0.1", description="Worker metrics bind address.")
    log_format: str = Field(
        "plain",
        description="`plain` lines for a terminal, or `json`: one object per line with the "
        "job id (and shard) on every line about a job, for a log pipeline to index; "
        "harder to read by eye.",
    )
    log_level: str = Field(
        "INFO",
        description="DEBUG, INFO, WARNING or ERROR: the least a line must be to be logged, by "
        "the API and the workers. DEBUG adds every library's detail, at many more lines.",
    )
    triton_timeout_s: float = Field(
        120.0, description="Per-request gRPC deadline; a timeout is retried, not failed."
    )
    visibility_timeout_s: int = Field(
        3600,
        description="Redis redelivers an unacknowledged task after this long. Must exceed the "
        "slowest shard, or a slow shard runs twice (harmless, but wasted).",
    )
    worker_stall_s: float = Field(
        60.0,
        description="A worker that holds no task while its queues have messages, and took "
        "none for this long, restarts its broker connection (Celery's Redis consumer can come "
        "back from a lost connection and never read again); still stalled as long again, it "
        "shuts down for its supervisor to start it afresh. 0: never. Shorter resumes sooner "
        "after such a stall; it must exceed the longest pause between a queue's message and "
        "its receipt.",
    )
    task_retry_budget_s: float = Field(
        1800.0,
        description="How long a shard keeps retrying retryable errors (Triton or Redis "
        "unavailable), from its first failure, before its documents are marked failed. "
        "Longer rides out longer outages; a shard that can never succeed holds its job open "
        "that long.",
    )
    shard_lease_s: float = Field(
        30.0,
        description="A running shard's lease, renewed by its worker every third of it; a "
        "shard whose lease expired (its worker died) is enqueued again by a sweeper, and a "
        "job whose shards were never enqueued is swept after this long. Shorter resumes "
        "sooner after a crash; too short for a stalled but live worker runs a shard twice "
        "(harmless: its second answer is discarded).",
    )
    sweep_interval_s: float = Field(
        5.0,
        description="How often each shard worker sweeps for expired leases and unenqueued "
        "jobs. Shorter resumes sooner, for one small Redis query per worker and interval.",
    )
    audit_interval_s: float = Field(
        30.0,
        description="How often each unfinished job is checked for shards found nowhere (no "
        "result, lease, queued or unacknowledged message: a worker killed as it took the "
        "message from Redis); one still missing at the next check is enqueued again. "
        "Shorter recovers sooner, for a read of the job's queue per job and interval.",
    )
    task_retry_backoff_s: int = Field(
        2, description="First retry delay; doubles each attempt (Celery backoff, with jitter)."
    )
    task_retry_backoff_max_s: int = Field(120, description="Cap on one retry delay.")


class Models(BaseModel):
    """Settings: models and model control."""

    model_control: str = Field(
        "explicit",
        description="Triton's model-control mode. `explicit`: models load on first use and "
        "idle ones are unloaded, so many models share one server's memory, at the price of "
        "a load wait (seconds) for a job whose model is not resident. `none`: every model "
        "of the repository loads at start and stays (no waits, all the memory).",
    )
    model_startup: str = Field(
        "doc-type",
        description="Comma-separated models loaded and warmed when Triton starts (explicit "
        "mode): their first jobs do not wait for a load; each costs start-up time and memory.",
    )
    model_pinned: str = Field(
        "doc-type",
        description="Comma-separated models never unloaded (and loaded at start): memory "
        "held whether they are used or not, in exchange for never waiting for a load.",
    )
    model_max_loaded: int = Field(
        4,
        description="Most models resident at once; past it the least recently used unpinned "
        "idle model is unloaded. Lower saves memory and costs more reloads. 0: no cap.",
    )
    model_memory_budget_mb: int = Field(
        0,
        description="Most megabytes of resident models (estimated from each served "
        "version's files); past it the least recently used unpinned idle model is unloaded. "
        "0: no budget.",
    )
    model_idle_s: float = Field(
        30.0,
        description="A model that answered within this many seconds is never unloaded, even "
        "over the cap or budget: running jobs keep their model, and the cap is exceeded "
        "until it goes idle.",
    )


class Scheduling(BaseModel):
    """Settings: scheduling."""

    small_job_max_documents: int = Field(
        16,
        description="Jobs of at most this many documents take the priority lane: their own "
        "queue and worker, and a higher Triton request priority, so a 3-document job never "
        "waits for a 20,000-document one. Raising it lets bigger jobs overtake bulk work; 0 "
        "turns the lane off.",
    )
    bulk_lanes: int = Field(
        8,
        description="Bulk queues (`cpu.0` ... ) that tenants are hashed onto; bulk workers take "
        "turns among them, so one tenant's backlog holds another's shards back by at most one "
        "shard per worker thread. More lanes make two tenants sharing one (and its FIFO) "
        "rarer, for more lists polled per BRPOP and one KEDA trigger each (deploy/k8s/keda.yaml "
        "lists them). Lowering it strands shards queued in the lanes dropped: drain them first.",
    )
