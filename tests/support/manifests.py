"""Objects for manifest jobs (docs/manifests.md): NDJSON objects and files in a tenant's
prefix of the object store the session's settings name (DOCQ_MANIFEST_URL)."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

from docq.config import Settings


def objects_root(settings: Settings) -> Path:
    """The directory of the settings' object store (a file:// manifest_url)."""
    return Path(urlsplit(settings.manifest_url).path)


def put(settings: Settings, tenant: str, name: str, data: bytes) -> Path:
    """Write object `name` of `tenant` (its key `tenants/<tenant>/<name>`)."""
    path = objects_root(settings) / "tenants" / tenant / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def ndjson(docs: list[dict[str, object]]) -> bytes:
    return b"".join(json.dumps(d).encode() + b"\n" for d in docs)
