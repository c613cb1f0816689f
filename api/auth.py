"""Who is calling: the FastAPI dependency that turns `Authorization: Bearer <key>` into the
tenant every /v1 route acts for (401 without a valid key)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from api.deps import Deps
from docq.errors import Unauthorized
from docq.jobs import DEFAULT_TENANT
from docq.store.tenants import Tenants


def tenant(request: Request, deps: Deps) -> str:
    """The tenant of the request's API key; the default tenant while auth is off."""
    if not deps.settings.auth_enabled:
        return DEFAULT_TENANT
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise Unauthorized("an API key is required: send `Authorization: Bearer <key>`")
    found = Tenants(deps.store.r, secret=deps.settings.api_key_secret).authenticate(key.strip())
    if found is None:
        raise Unauthorized("the API key is unknown or revoked")
    return found


Tenant = Annotated[str, Depends(tenant)]
