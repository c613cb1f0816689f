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
    """
    endpoints = deps.catalog.endpoints_ready()
    checks = {"redis": deps.store.ping(), "triton": any(endpoints.values())}
    ok = checks["redis"]
    status = "unavailable" if not ok else "ok" if all(checks.values()) else "degraded"
    return JSONResponse(
        {"status": status, "checks": checks, "required": ["redis"], "triton_endpoints": endpoints},
        200 if ok else 503,
    )
