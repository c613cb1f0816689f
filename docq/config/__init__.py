"""The one settings object: every knob of docq, read from `DOCQ_*` environment variables.

Nothing else in the code base reads `os.environ`. A module per area declares its fields, each
saying what it trades and carrying its limits as pydantic constraints (so a bad environment
is refused with every wrong field at once, and `Settings.model_json_schema()` shows the
limits):

    redis.py          the job store and broker, single or behind Sentinels
    triton.py         the Triton endpoints, their health, gRPC deadline and depth
    models.py         the model repository, the default model, model control
    api.py            where the API listens, its per-upload limits
    tenants.py        API keys, each tenant's limits, consoles' logins
    jobs.py           shards, retention
    scheduling.py     the priority and bulk lanes, batching
    recovery.py       redelivery, leases, sweeps, stalls, retry budgets
    webhooks.py       the default webhook, delivery timing and retries
    files.py          uploaded files' sizes, how many are read at once
    extract.py        per-document extraction limits and OCR
    blobs.py          where uploaded bytes wait, the orphan sweep
    manifests.py      the object store manifest jobs read, how they are cut
    observability.py  logs and worker metrics
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from docq.config.api import Api
from docq.config.blobs import LOCAL_BLOBS, Blobs
from docq.config.extract import Extraction
from docq.config.files import Files
from docq.config.jobs import Jobs
from docq.config.manifests import Manifests
from docq.config.models import Models
from docq.config.observability import Observability
from docq.config.paths import REPO_ROOT
from docq.config.recovery import Recovery
from docq.config.redis import Redis
from docq.config.scheduling import Scheduling
from docq.config.tenants import Tenants
from docq.config.triton import Triton
from docq.config.webhooks import Webhooks

__all__ = ["LOCAL_BLOBS", "REPO_ROOT", "Settings", "SettingsError", "get_settings"]


# pydantic collects the fields of the last base first: the bases are listed in the reverse of
# the order the schema (and the errors) name them, and api's come before tenants' (which
# checks tenant_max_queued_documents against max_documents_per_job).
class Settings(  # one base per area
    BaseSettings,
    Observability,
    Manifests,
    Blobs,
    Extraction,
    Files,
    Webhooks,
    Recovery,
    Scheduling,
    Jobs,
    Tenants,
    Api,
    Models,
    Triton,
    Redis,
):
    """docq settings, validated once at process start (fields: a module per area, above)."""

    # hide_input_in_errors: an error must not print a secret (API key secret, webhook
    # secret, a password in redis_url) into a log. BaseSettings validates defaults too, so
    # the checks between fields see an unset one (webhook_secret, tenant_max_queued_...).
    model_config = SettingsConfigDict(
        env_prefix="DOCQ_", env_file=None, extra="ignore", hide_input_in_errors=True
    )

    @field_validator("tenant_max_queued_documents")
    @classmethod
    def _a_tenant_holds_a_whole_job(cls, most: int, info: ValidationInfo) -> int:
        per_job = info.data.get("max_documents_per_job")  # absent when itself refused
        if per_job is not None and most < per_job:
            raise ValueError(f"must be at least max_documents_per_job ({per_job})")
        return most

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


class SettingsError(ValueError):
    """The environment's settings refused: every wrong `DOCQ_*` variable, one line each."""

    def __init__(self, exc: ValidationError) -> None:
        lines = [
            f"DOCQ_{'.'.join(map(str, e['loc'])).upper() or '*'}: {e['msg']}" for e in exc.errors()
        ]
        super().__init__(f"{len(lines)} wrong setting(s):\n" + "\n".join(lines))


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, built on first use (after fork is fine: it holds no sockets)."""
    try:
        return Settings()
    except ValidationError as exc:
        raise SettingsError(exc) from None
