"""The one settings object: every knob of docq, read from `DOCQ_*` environment variables
(the fields, by area, are in config_fields.py).

Nothing else in the code base reads `os.environ`. Each setting says what it trades.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from docq.config_blobs import Blobs
from docq.config_extract import Extraction
from docq.config_fields import (
    REPO_ROOT,
    Access,
    Api,
    JobStore,
    Models,
    Places,
    Scheduling,
    Webhooks,
    Workers,
)
from docq.config_manifests import Manifests
from docq.config_redis import RedisTopology
from docq.config_uploads import Files
from docq.errors import WebhookRefused
from docq.webhook_guard import check_secret, check_url

__all__ = ["REPO_ROOT", "Settings", "get_settings"]

# The levels DOCQ_LOG_LEVEL takes (the API's uvicorn and the workers' --loglevel take them too)
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


class Settings(  # one base per area
    BaseSettings,
    Places,
    RedisTopology,
    Api,
    Access,
    JobStore,
    Workers,
    Models,
    Scheduling,
    Webhooks,
    Extraction,
    Files,
    Blobs,
    Manifests,
):
    """docq settings; validated once at process start (fields: config_fields.py)."""

    model_config = SettingsConfigDict(env_prefix="DOCQ_", env_file=None, extra="ignore")

    @model_validator(mode="after")
    def _check(self) -> Settings:
        if self.shard_size < 1:
            raise ValueError("shard_size must be >= 1")
        if self.triton_max_in_flight < 1:
            raise ValueError("triton_max_in_flight must be >= 1")
        if self.triton_health_interval_s <= 0:
            raise ValueError("triton_health_interval_s must be > 0")
        if self.triton_hold_s < 0:
            raise ValueError("triton_hold_s must be >= 0")
        if self.log_format not in ("plain", "json"):
            raise ValueError("log_format must be plain or json")
        self.log_level = self.log_level.upper()
        if self.log_level not in LOG_LEVELS:
            raise ValueError(f"log_level must be one of {', '.join(LOG_LEVELS)}")
        if self.batch_max_wait_ms < 0 or self.batch_max_queued_windows < 1:
            raise ValueError("batch_max_wait_ms must be >= 0, batch_max_queued_windows >= 1")
        if self.max_parsing_uploads < 1:
            raise ValueError("max_parsing_uploads must be >= 1")
        if self.bulk_lanes < 1:
            raise ValueError("bulk_lanes must be >= 1")
        if self.tenant_max_active_jobs < 1:
            raise ValueError("tenant_max_active_jobs must be >= 1")
        if self.tenant_max_queued_documents < self.max_documents_per_job:
            raise ValueError("tenant_max_queued_documents must be >= max_documents_per_job")
        if self.default_model == "":
            self.default_model = None
        if self.model_control not in ("explicit", "none", "poll"):
            raise ValueError("model_control must be explicit, none or poll")
        if self.model_max_loaded < 0 or self.model_memory_budget_mb < 0 or self.model_idle_s < 0:
            raise ValueError("model_max_loaded, model_memory_budget_mb, model_idle_s must be >= 0")
        self._check_webhooks()
        return self

    def _check_webhooks(self) -> None:
        if self.webhook_url == "":
            self.webhook_url = None
        if self.webhook_url is not None and not self.webhook_secret:
            raise ValueError("webhook_url needs webhook_secret (a whsec_... secret)")
        if self.webhook_url is not None and self.webhook_secret is not None:
            try:
                check_url(self.webhook_url)
                check_secret(self.webhook_secret)
            except WebhookRefused as exc:
                raise ValueError(f"default webhook: {exc.message}") from None
        if self.webhook_max_attempts < 1:
            raise ValueError("webhook_max_attempts must be >= 1")
        if min(self.webhook_timeout_s, self.webhook_backoff_s, self.webhook_stall_s) <= 0:
            raise ValueError("webhook_timeout_s, webhook_backoff_s and webhook_stall_s must be > 0")
        if self.job_ttl_s < 1:
            raise ValueError("job_ttl_s must be >= 1")
        if min(self.shard_lease_s, self.sweep_interval_s, self.audit_interval_s) <= 0:
            raise ValueError("shard_lease_s, sweep_interval_s and audit_interval_s must be > 0")
        if self.task_retry_budget_s < 0:
            raise ValueError("task_retry_budget_s must be >= 0")
        if self.worker_stall_s < 0:
            raise ValueError("worker_stall_s must be >= 0 (0: no stall guard)")
        if self.redis_wait_replicas < 0 or self.redis_wait_timeout_ms < 1:
            raise ValueError("redis_wait_replicas must be >= 0, redis_wait_timeout_ms >= 1")
        if self.redis_mode not in ("single", "sentinel"):
            raise ValueError("redis_mode must be single or sentinel")
        if self.redis_socket_timeout_s <= 0:
            raise ValueError("redis_socket_timeout_s must be > 0")

    @property
    def triton_endpoints(self) -> tuple[str, ...]:
        """The Triton gRPC endpoints, in the order given (at least one)."""
        return _names(self.triton_grpc_urls) or (self.triton_grpc_url,)

    @property
    def celery_broker_url(self) -> str:
        return self.broker_url or self.redis_url

    @property
    def pinned_models(self) -> tuple[str, ...]:
        return _names(self.model_pinned)

    @property
    def startup_models(self) -> tuple[str, ...]:
        """Loaded when Triton starts: the startup list, then the pinned models not in it."""
        return tuple(dict.fromkeys((*_names(self.model_startup), *self.pinned_models)))


def _names(csv: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in csv.split(",") if n.strip())


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, built on first use (after fork is fine: it holds no sockets)."""
    return Settings()
