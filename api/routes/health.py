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
    """Redis and Triton are reachable: the API can accept and the workers can classify.

    With several Triton endpoints one ready endpoint is enough (the workers route around
    the others); `triton_endpoints` shows each.
    """
    endpoints = deps.catalog.endpoints_ready()
    checks = {"redis": deps.store.ping(), "triton": any(endpoints.values())}
    ok = all(checks.values())
    return JSONResponse(
        {"status": "ok" if ok else "unavailable", "checks": checks, "triton_endpoints": endpoints},
        200 if ok else 503,
    )
