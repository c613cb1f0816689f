"""The one settings object: every knob of docq, read from `DOCQ_*` environment variables.

Nothing else in the code base reads `os.environ`. Each setting says what it trades.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parent.parent


class Settings(BaseSettings):
    """docq settings; validated once at process start."""

    model_config = SettingsConfigDict(env_prefix="DOCQ_", env_file=None, extra="ignore")

    # --- where things are ---------------------------------------------------------
    redis_url: str = Field(
        "redis://127.0.0.1:6379/0",
        description="Job store. Holds documents until their shard is done, so size it for "
        "the largest backlog you accept.",
    )
    broker_url: str | None = Field(
        None,
        description="Celery broker; defaults to redis_url. A separate Redis isolates "
        "queue traffic from job-store traffic.",
    )
    triton_grpc_url: str = Field(
        "127.0.0.1:8001", description="Triton gRPC endpoint the workers and the API call."
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

    # --- API ----------------------------------------------------------------------
    api_host: str = Field("127.0.0.1", description="API bind address.")
    api_port: int = Field(8080, description="API port (Triton owns 8000-8002, Flower 5555).")
    max_upload_bytes: int = Field(
        256 * 1024 * 1024,
        description="Largest request body. Larger uploads get 413 instead of filling memory.",
    )
    max_documents_per_job: int = Field(
        100_000, description="Most documents in one job; more gets 413 (split the upload)."
    )
    max_document_chars: int = Field(
        2_000_000,
        description="Longest document text. Long documents are windowed, never truncated, so "
        "this caps the inference cost one document can cause.",
    )
    results_page_max: int = Field(1000, description="Largest `limit` of a results page.")

    # --- job store ----------------------------------------------------------------
    shard_size: int = Field(
        64,
        description="Documents per shard (one Celery task). Smaller shards spread a job over "
        "more workers and lose less work on a crash; larger ones cost fewer round trips.",
    )
    job_ttl_s: int = Field(
        7 * 24 * 3600, description="How long jobs, documents and results are kept (retention)."
    )

    # --- workers ------------------------------------------------------------------
    triton_max_in_flight: int = Field(
        4,
        description="gRPC requests a worker process keeps in flight. More keeps Triton's "
        "dynamic batcher fed; too many only queues inside Triton (backpressure stops here).",
    )
    triton_timeout_s: float = Field(
        120.0, description="Per-request gRPC deadline; a timeout is retried, not failed."
    )
    visibility_timeout_s: int = Field(
        3600,
        description="Redis redelivers an unacknowledged task after this long. Must exceed the "
        "slowest shard, or a slow shard runs twice (harmless, but wasted).",
    )
    task_max_retries: int = Field(
        8, description="Retries of a shard on retryable errors (Triton or Redis unavailable)."
    )
    task_retry_backoff_s: int = Field(
        2, description="First retry delay; doubles each attempt (Celery backoff, with jitter)."
    )
    task_retry_backoff_max_s: int = Field(120, description="Cap on one retry delay.")

    @model_validator(mode="after")
    def _check(self) -> Settings:
        if self.shard_size < 1:
            raise ValueError("shard_size must be >= 1")
        if self.triton_max_in_flight < 1:
            raise ValueError("triton_max_in_flight must be >= 1")
        if self.default_model == "":
            self.default_model = None
        return self

    @property
    def celery_broker_url(self) -> str:
        return self.broker_url or self.redis_url


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, built on first use (after fork is fine: it holds no sockets)."""
    return Settings()
