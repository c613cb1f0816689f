"""Settings: the Triton servers the workers and the API call, and how they are called."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Triton(BaseModel):
    """Settings: Triton's endpoints, their health, the gRPC calls' deadline and depth."""

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
        gt=0,
        description="How often a worker checks the readiness of each Triton endpoint. "
        "Shorter takes a restarted server back sooner, at the cost of one small gRPC call "
        "per endpoint and interval.",
    )
    triton_hold_s: float = Field(
        30.0,
        ge=0,
        description="How long a batch that finds no Triton endpoint reachable (a server "
        "restarting, its models loading) waits for one to come back, sent again every half "
        "second, before its shard fails and is retried with Celery's backoff. Covers a "
        "supervisor's restart; 0 fails at once.",
    )
    triton_http_port: int = Field(8000, description="Port of the local tritonserver's HTTP API.")
    triton_grpc_port: int = Field(8001, description="Port of the local tritonserver's gRPC API.")
    triton_metrics_port: int = Field(8002, description="Port of the local tritonserver's metrics.")
    triton_max_in_flight: int = Field(
        4,
        ge=1,
        description="gRPC requests a worker process keeps in flight. More keeps Triton's "
        "dynamic batcher fed; too many only queues inside Triton (backpressure stops here, "
        "and waiting windows fill fuller batches).",
    )
    triton_timeout_s: float = Field(
        120.0, description="Per-request gRPC deadline; a timeout is retried, not failed."
    )
    triton_admin_key: str = Field(
        "",
        description="Value of the `triton-admin-key` header Triton asks for on its model "
        "repository, model config, statistics, shared-memory, trace and logging APIs (HTTP "
        "and gRPC): set, the launcher restricts them and the API and workers send it; "
        "inference and health stay open. Empty: unrestricted (the local stack listens on "
        "loopback only); deployments must set it.",
    )
