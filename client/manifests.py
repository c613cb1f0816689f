"""Submit a job from object storage: a manifest of objects (or a prefix) in the tenant's
store, instead of documents (docs/manifests.md). The server reads nothing at submission;
its workers fetch the objects."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from client.sdk import DocqClient


def submit_manifest(
    client: DocqClient,
    *,
    objects: Sequence[str] | None = None,
    prefix: str | None = None,
    model: str | None = None,
    results: str | None = None,
    webhook_url: str | None = None,
    webhook_secret: str | None = None,
    idempotency_key: str | None = None,
) -> dict[str, Any]:
    """Create a job of the objects named (`objects`: names relative to the tenant's prefix,
    or full URIs; or every object under `prefix`); `results`: where the results are written
    back as NDJSON when it ends. Returns the 202 answer (`id`, ...)."""
    if (objects is None) == (prefix is None):
        raise ValueError("name either objects or a prefix")
    body: dict[str, Any] = {
        "manifest": {"objects": list(objects)} if objects is not None else {"prefix": prefix}
    }
    if model is not None:
        body["model"] = model
    if results is not None:
        body["results"] = results
    if webhook_url is not None:
        secret = {"secret": webhook_secret} if webhook_secret else {}
        body["webhook"] = {"url": webhook_url, **secret}
    headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
    return client._call("POST", "/v1/jobs", json=body, headers=headers)  # type: ignore[no-any-return]
