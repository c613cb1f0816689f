"""A job from object storage: `POST /v1/jobs` with a manifest instead of documents.

The API checks the manifest (the model, the webhook, each object the tenant's and there,
their count) with a HEAD per object or one listing of a prefix, cuts the objects into
parts (docq/manifests.py), stores one reference per part and enqueues them; no document
byte is read here. Workers read the parts (workers/objects.py). docs/manifests.md.
"""

from __future__ import annotations

import json

import pydantic

from api.deps import Resources
from api.submissions import (
    JOBS_CREATED,
    Submitted,
    _admit,
    _claim,
    _created,
    _enqueued,
    _replay,
    _webhook_target,
)
from docq.errors import MalformedBody, QueueUnavailable, ValidationError
from docq.manifests import ManifestJobCreate, objects_of, plan
from docq.objects import Objects, Scope, open_objects
from docq.queue import enqueue_shards
from docq.schemas import WebhookCreated
from docq.store import IdempotencyClaim
from docq.store.idempotency import fingerprint, key_digest
from docq.store.manifests import create_manifest_job, job_extra, most_queued

MANIFEST_KEY = b'"manifest"'


def is_manifest(body: bytes) -> bool:
    """Whether a JSON body is a manifest (a top-level `manifest`), not documents."""
    if MANIFEST_KEY not in body:
        return False
    try:
        raw = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return False  # the upload's parser says what is wrong with it
    return isinstance(raw, dict) and "manifest" in raw


def parse(body: bytes) -> ManifestJobCreate:
    """The manifest of a JSON body, or a 422 naming what is wrong."""
    try:
        return ManifestJobCreate.model_validate_json(body)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise ValidationError(f"{field}: {first['msg']}", {"field": field}) from None
    except ValueError as exc:  # pragma: no cover (is_manifest decoded it already)
        raise MalformedBody(f"malformed JSON: {exc}", {"field": "body"}) from None


_objects: dict[str, Objects] = {}


def objects(deps: Resources) -> Objects:
    """The API process's object store (DOCQ_MANIFEST_URL), made on first use."""
    url = deps.settings.manifest_url
    if url not in _objects:
        _objects[url] = open_objects(deps.settings)
    return _objects[url]


def submit_manifest(
    deps: Resources, tenant: str, upload: ManifestJobCreate, idempotency_key: str | None
) -> Submitted:
    """Create `tenant`'s job of the objects a manifest names (or the one its Idempotency-Key
    made). Refused whole, nothing created: an object outside the tenant's prefix (403), one
    that does not exist, a `results` prefix outside it, too many objects, the model, the
    webhook, the tenant's limits."""
    s = deps.settings
    model = upload.model or s.default_model
    if model is None:
        raise ValidationError("no model given and no default model configured", {"field": "model"})
    webhook = _webhook_target(upload, s)  # type: ignore[arg-type]  # (its webhook field)
    deps.catalog.require(model)
    scope = Scope(objects(deps), tenant)
    results_key = None
    if upload.results is not None:
        results_key = scope.key(upload.results.rstrip("/") + "/")
    found = objects_of(upload.manifest, scope, s.manifest_max_objects)
    parts = plan(found, s.manifest_part_bytes, s.shard_size)
    stride = max(s.manifest_part_bytes, s.shard_size)
    claim = digest = None
    if idempotency_key is not None:
        digest = key_digest(tenant, idempotency_key)
        named = [(key, str(size)) for key, size in found]
        claim = IdempotencyClaim(
            job_id=deps.store.new_job_id(),
            fingerprint=fingerprint(
                model, [*named, ("results", results_key or "")], webhook.url if webhook else None
            ),
            bound=False,
        )
        earlier = _claim(deps, digest, claim)
        if earlier is not None:
            return Submitted(_replay(deps, earlier), replayed=True)
    idempotency = (digest, claim) if digest is not None and claim is not None else None
    try:
        # its count is unknown until its parts are read: it reserves the most they can hold
        _admit(deps, tenant, most_queued(parts, s.manifest_max_documents))
        job = create_manifest_job(
            deps.store,
            model,
            parts,
            stride,
            tenant=tenant,
            scope_uri=scope.uri(""),
            webhook=webhook,
            results_key=results_key,
            idempotency=idempotency,
            max_documents=s.manifest_max_documents,
        )
        try:
            enqueue_shards(deps.celery, job, lanes=s.bulk_lanes)
        except QueueUnavailable as exc:
            deps.store.delete_job(job.id, job.shards, tenant=tenant)
            raise QueueUnavailable("could not enqueue the job; nothing was stored") from exc
    except BaseException:
        if idempotency is not None:
            deps.store.idempotency.release(*idempotency)
        raise
    _enqueued(deps, job)
    JOBS_CREATED.labels(model).inc()
    shown = None
    if webhook is not None:
        shown = WebhookCreated(
            url=webhook.url, secret=webhook.secret if webhook.secret_generated else None
        )
    return Submitted(_created(job, shown, []), replayed=False)


def write_back_after_cancel(deps: Resources, job_id: str) -> bool:
    """After a cancel: whether a worker is to write back a manifest job's results (those
    answered so far) before its event, which names the files; False for any other job (the
    caller dispatches the event itself). The API writes no object: it enqueues one of the
    job's shards, whose run finds the job final and does what a job's end sets off
    (workers/tasks.py `finish_job`: the write-back, then the event), as a redelivered shard
    does. QueueUnavailable when the broker does not take it (a repeated DELETE retries)."""
    job = deps.store.get_job(job_id)
    if job.manifest is None or job.results_files is not None or not job.status.final:
        return False
    if not job_extra(deps.store, job_id).get("results_key"):
        return False
    enqueue_shards(
        deps.celery, job, [job.shards - 1], lanes=deps.settings.bulk_lanes, extracted=True
    )
    return True
