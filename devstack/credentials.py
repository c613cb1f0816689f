"""The local stack's credentials, made on first start and kept in .run/ (ignored by git):
the development API key (`.run/dev-api-key`) and Flower's login (`.run/flower-login`).
Deployments bring their own (DOCQ_FLOWER_BASIC_AUTH, `docq keys create`)."""

from __future__ import annotations

import secrets
import sys
import time
from pathlib import Path

from docq.config import Settings
from docq.errors import StoreUnavailable
from docq.store import connection
from docq.store.tenants import Tenants

DEV_TENANT = "dev"
REDIS_WAIT_S = 60  # honcho starts every process at once: Redis may still be loading its AOF


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.write_text(text + "\n")


def tenant_headers(settings: Settings, tenant: str) -> dict[str, str]:
    """`Authorization` with a new key of `tenant`, made in the Redis of `settings`: how the
    tests and the benches call the API as a tenant of their own."""
    tenants = Tenants(connection.connect(settings.redis_url), secret=settings.api_key_secret)
    return {"Authorization": f"Bearer {tenants.create_key(tenant)[1]}"}


def ensure_dev_key(settings: Settings, path: Path) -> str:
    """The development tenant's API key: the one in `path` while Redis still knows it, else
    a new one, written there and printed."""
    tenants = Tenants(connection.from_settings(settings), secret=settings.api_key_secret)
    kept = path.read_text().strip() if path.exists() else ""
    deadline = time.monotonic() + REDIS_WAIT_S
    while True:
        try:
            if kept and tenants.authenticate(kept) is not None:
                return kept
            _, key = tenants.create_key(DEV_TENANT)
            break
        except StoreUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    _write_private(path, key)
    print(f"docq: development API key (tenant {DEV_TENANT!r}), kept in {path}:", file=sys.stderr)
    print(f"    {key}", file=sys.stderr)
    return key


def flower_login(settings: Settings, path: Path) -> str:
    """Flower's `user:password`: DOCQ_FLOWER_BASIC_AUTH, else the one kept in `path` (made on
    first start)."""
    if settings.flower_basic_auth:
        return settings.flower_basic_auth
    if not path.exists():
        _write_private(path, f"docq:{secrets.token_urlsafe(18)}")
        print(f"docq: Flower login (user:password) kept in {path}", file=sys.stderr)
    return path.read_text().strip()
