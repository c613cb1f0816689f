"""Settings: tenants, their keys and their limits, and the logins of docq's other consoles."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Tenants(BaseModel):
    """Settings: access and each tenant's share."""

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
        ge=1,
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
    flower_basic_auth: str = Field(
        "",
        description="`user:password` Flower asks for (comma-separate several). Empty: "
        "`make up` generates one in .run/flower-login; deployments must set it.",
    )
