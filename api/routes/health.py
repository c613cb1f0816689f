"""Liveness and readiness probes."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from api.deps import Deps

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """The process is alive."""
    return {"status": "ok"}


@router.get("/readyz")
def readyz(deps: Deps) -> JSONResponse:
    """This API process can serve: Redis (job store and broker) answers. 503 otherwise.

    Triton is reported, not required: while it is down, uploads are accepted and wait,
    shards retry against their time budget, and status and results stay readable, so a
    Triton outage must not take the API out of its load balancer. `checks` says which
    dependency is down (`status` is `degraded` when only Triton is); with several Triton
    endpoints one ready endpoint is enough (the workers route around the others), and
    `triton_endpoints` shows each.

    A job store at its maxmemory is reported the same way (`checks.store_memory` false,
    `status` degraded, `store_memory` its used and maximum bytes): uploads are refused
    (503 store_full) but polling and results work, and every API process shares the one
    Redis, so taking this one out of the load balancer would only stop the reads.
    """
    endpoints = deps.catalog.endpoints_ready()
    memory = deps.store.memory()
    checks = {
        "redis": deps.store.ping(),
        "triton": any(endpoints.values()),
        "store_memory": memory is not None and not memory.full,
    }
    ok = checks["redis"]
    status = "unavailable" if not ok else "ok" if all(checks.values()) else "degraded"
    body: dict[str, object] = {
        "status": status,
        "checks": checks,
        "required": ["redis"],
        "triton_endpoints": endpoints,
    }
    if memory is not None:
        body["store_memory"] = {"used_bytes": memory.used_bytes, "max_bytes": memory.max_bytes}
    return JSONResponse(body, 200 if ok else 503)
