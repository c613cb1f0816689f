"""The upload's orchestration, one decision after parsing: the model, the webhook, what
becomes of bad documents (accepted as failed, or `on_invalid=reject`: the upload refused,
listing them all), the Idempotency-Key (claim, or replay of the job it made; scoped to the
tenant), the tenant's limits, the lane, storing and enqueueing, and the rollback that
leaves nothing behind when a step fails. Routes parse and answer.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass

from prometheus_client import Counter

from api.deps import Resources
from docq import webhook_guard
from docq.blobs import digest
from docq.config import Settings
from docq.errors import (
    Conflict,
    IdempotencyKeyReused,
    InvalidDocuments,
    NotFound,
    QueueUnavailable,
    StoreUnavailable,
    TenantLimitExceeded,
    ValidationError,
)
from docq.jobs import JobRecord
from docq.queue import enqueue_shards
from docq.schemas import (
    DocumentFailure,
    DocumentIn,
    FileDocumentIn,
    JobCreate,
    JobCreated,
    OnInvalid,
    WebhookCreated,
)
from docq.store import Document, IdempotencyClaim, WebhookTarget
from docq.store.creating import failures
from docq.store.idempotency import fingerprint, key_digest
from docq.store.tenants import Tenants

log = logging.getLogger(__name__)

JOBS_CREATED = Counter("docq_jobs_created_total", "Jobs accepted", ["model"])
DOCUMENTS_ACCEPTED = Counter("docq_documents_accepted_total", "Documents accepted", ["model"])
DOCUMENTS_INVALID = Counter(
    "docq_documents_invalid_total",
    "Documents accepted as failed at upload (bad files), by error_code",
    ["model", "code"],
)

# How long an upload whose Idempotency-Key is claimed by one still being stored waits for
# that job (then answers with it) before a 409 asks the client to retry. Storing is one
# transaction, milliseconds for most uploads and seconds for the largest; a longer wait
# holds a thread of the API's pool per duplicate for as long.
IDEMPOTENCY_WAIT_S = 10.0
IDEMPOTENCY_POLL_S = 0.02


@dataclass(frozen=True, slots=True)
class Submitted:
    """The answer to an upload, and whether it replays an earlier one (200, not 202)."""

    answer: JobCreated
    replayed: bool


def submit(
    deps: Resources,
    tenant: str,
    upload: JobCreate,
    idempotency_key: str | None,
    on_invalid: OnInvalid = OnInvalid.ACCEPT,
) -> Submitted:
    """Create `tenant`'s job an upload asks for (or find the one its Idempotency-Key made).

    The request's own problems (model, webhook, then quota, key) refuse it first; then its
    bad documents refuse it too when it asked for all or nothing (InvalidDocuments, every
    one listed), else they are stored failed and the job runs with the rest."""
    model = upload.model or deps.settings.default_model
    if model is None:
        raise ValidationError("no model given and no default model configured", {"field": "model"})
    webhook = _webhook_target(upload, deps.settings)
    deps.catalog.require(model)
    documents = [_document(d) for d in upload.documents]
    failed = failures(documents)
    if failed and on_invalid == OnInvalid.REJECT:
        first = failed[0]
        raise InvalidDocuments(
            f"{len(failed)} of {len(documents)} documents are invalid, the first document "
            f"{first['document']} ({first['id']!r}): {first['error_code']}: {first['message']} "
            "(on_invalid=reject: nothing was created)",
            {"errors": failed},
        )
    claim = None
    if idempotency_key is not None:
        digest = key_digest(tenant, idempotency_key)
        claim = IdempotencyClaim(
            job_id=deps.store.new_job_id(),
            fingerprint=fingerprint(
                model, (_fingerprinted(d) for d in documents), webhook.url if webhook else None
            ),
            bound=False,
        )
        earlier = _claim(deps, digest, claim)
        if earlier is not None:
            return Submitted(_replay(deps, earlier), replayed=True)
    job = _create(deps, tenant, model, documents, webhook, (digest, claim) if claim else None)
    JOBS_CREATED.labels(model).inc()
    DOCUMENTS_ACCEPTED.labels(model).inc(job.documents)
    for f in failed:
        DOCUMENTS_INVALID.labels(model, f["error_code"]).inc()
    shown = None
    if webhook is not None:
        shown = WebhookCreated(
            url=webhook.url, secret=webhook.secret if webhook.secret_generated else None
        )
    return Submitted(_created(job, shown, failed), replayed=False)


def _document(doc: DocumentIn | FileDocumentIn) -> Document:
    """A checked document as the job store keeps it (a file: its bytes and sniffed type; a
    bad file: why it failed, without its bytes)."""
    if isinstance(doc, DocumentIn):
        return Document(doc.id, doc.text)
    if doc.failure is not None:
        code, message = doc.failure
        return Document(doc.id, "", doc.content_type, error=message, error_code=code)
    assert doc.data is not None, "files are checked before they are submitted (api/files.py)"
    return Document(doc.id, "", content_type=doc.content_type, content=doc.data)


def _fingerprinted(doc: Document) -> tuple[str, str]:
    """What of a document makes two uploads the same request: its text, or its file's type
    and digest (after a NUL, which no text holds, so no text can look like a file); a bad
    file by why it failed (its message names its size or its bytes' type)."""
    if doc.error_code is not None:
        return doc.id, f"\x00{doc.content_type} {doc.error_code} {doc.error}"
    if doc.content is None:
        return doc.id, doc.text
    return doc.id, f"\x00{doc.content_type} {digest(doc.content)}"


def _webhook_target(upload: JobCreate, settings: Settings) -> WebhookTarget | None:
    """The job's webhook: its own (URL guarded, secret checked or generated), else the
    tenant's default, else none."""
    if upload.webhook is not None:
        url = webhook_guard.guard(
            upload.webhook.url, allow_private=settings.webhook_allow_private_networks
        )
        if upload.webhook.secret is None:
            return WebhookTarget(url, webhook_guard.generate_secret(), secret_generated=True)
        return WebhookTarget(url, webhook_guard.check_secret(upload.webhook.secret))
    if settings.webhook_url is not None and settings.webhook_secret is not None:
        # The operator's URL is trusted here; it meets the guard again at each delivery.
        return WebhookTarget(settings.webhook_url, settings.webhook_secret)
    return None


def _create(
    deps: Resources,
    tenant: str,
    model: str,
    documents: list[Document],
    webhook: WebhookTarget | None,
    idempotency: tuple[str, IdempotencyClaim] | None,
) -> JobRecord:
    """Store the job and enqueue its shards; on failure leave nothing behind (nor the key).

    The Idempotency-Key is bound in the transaction that makes the job known (its tenant's,
    the sweeper's), which lists it as not yet enqueued: if this process dies after it, the
    sweeper (workers/sweeper.py) enqueues the job and a retry with the same key answers
    with it, so the retry makes no second job; an upload racing this one waits for it
    (`_claim`). A text upload of more than `accept_head_shards` shards is stored in two
    transactions, its first shards enqueued between them (`_create_in_two`).
    """
    job_id = idempotency[1].job_id if idempotency else None
    try:
        _admit(deps, tenant, len(documents))
        small = len(documents) <= deps.settings.small_job_max_documents
        head = deps.settings.accept_head_shards
        if 0 < head * deps.settings.shard_size < len(documents) and not any(
            d.content_type is not None
            for d in documents  # (a failed document has one too)
        ):
            return _create_in_two(deps, tenant, model, documents, webhook, idempotency, job_id)
        job = deps.store.create_job(
            model,
            documents,
            webhook=webhook,
            job_id=job_id,
            priority=small,
            tenant=tenant,
            idempotency=idempotency,
        )
        try:
            enqueue_shards(deps.celery, job, lanes=deps.settings.bulk_lanes)
        except QueueUnavailable as exc:  # leave nothing behind, tell the client
            files = [i for i, d in enumerate(documents) if d.content is not None]
            deps.store.delete_job(job.id, job.shards, files)
            raise QueueUnavailable("could not enqueue the job; nothing was stored") from exc
    except BaseException:
        if idempotency is not None:
            deps.store.idempotency.release(*idempotency)
        raise
    _enqueued(deps, job)
    return job


def _create_in_two(
    deps: Resources,
    tenant: str,
    model: str,
    documents: list[Document],
    webhook: WebhookTarget | None,
    idempotency: tuple[str, IdempotencyClaim] | None,
    job_id: str | None,
) -> JobRecord:
    """A large text upload: its first `accept_head_shards` shards stored (JobStore.open_job)
    and enqueued, so that workers classify them while the rest is stored (close_job) and
    enqueued. The client is answered after both, as for any upload; a failure at any step
    removes the job (a worker that started on its first shards finds it gone and writes
    nothing)."""
    store, head, lanes = deps.store, deps.settings.accept_head_shards, deps.settings.bulk_lanes
    job = store.open_job(model, documents, head, job_id=job_id, tenant=tenant)
    try:
        enqueue_shards(deps.celery, job, range(head), lanes=lanes)
        store.close_job(job, documents, head, webhook=webhook, idempotency=idempotency)
        enqueue_shards(deps.celery, job, range(head, job.shards), lanes=lanes)
    except (StoreUnavailable, QueueUnavailable) as exc:  # (NotReplicated: a StoreUnavailable)
        with contextlib.suppress(StoreUnavailable):
            store.delete_job(job.id, job.shards, tenant=tenant)
        if isinstance(exc, QueueUnavailable):
            raise QueueUnavailable("could not enqueue the job; nothing was stored") from exc
        raise
    _enqueued(deps, job)
    return job


def _enqueued(deps: Resources, job: JobRecord) -> None:
    """Every shard of `job` is enqueued: the sweeper need not."""
    try:
        deps.store.recovery.enqueued(job.id)
    except StoreUnavailable as exc:  # the job runs; the sweeper only enqueues it once more
        log.warning("job %s: enqueued, but not unlisted for the sweeper: %s", job.id, exc)


def _admit(deps: Resources, tenant: str, documents: int) -> None:
    """Refuse the upload (429) when it would take the tenant past its limits.

    Checked before the job is stored, so two uploads racing may both pass: a tenant can
    exceed a limit by the uploads it has in flight at that moment, never by more.
    """
    load = Tenants(deps.store.r).load(tenant)
    s = deps.settings
    if load.jobs >= s.tenant_max_active_jobs:
        raise TenantLimitExceeded(
            f"{load.jobs} jobs are queued or running, the most a tenant may have; "
            "retry once some finish",
            {"limit": "tenant_max_active_jobs", "max": s.tenant_max_active_jobs},
        )
    if load.documents + documents > s.tenant_max_queued_documents:
        raise TenantLimitExceeded(
            f"{load.documents} documents are waiting and this upload adds {documents}: "
            f"more than the {s.tenant_max_queued_documents} a tenant may have queued; "
            "retry once some finish",
            {"limit": "tenant_max_queued_documents", "max": s.tenant_max_queued_documents},
        )


def _claim(deps: Resources, digest: str, claim: IdempotencyClaim) -> IdempotencyClaim | None:
    """Claim the key for this upload, or the earlier claim when it is the same request.

    An upload that finds the key claimed by the same request still being stored (two
    clients, or a client's retry, racing) waits for that job and answers with it. Raises
    IdempotencyKeyReused when the key came with a different request, Conflict when the
    first request with it is not stored within IDEMPOTENCY_WAIT_S.
    """
    deadline = time.monotonic() + IDEMPOTENCY_WAIT_S
    while time.monotonic() < deadline:
        earlier = deps.store.idempotency.claim(digest, claim)
        if earlier is None:
            return None
        if earlier.fingerprint != claim.fingerprint:
            raise IdempotencyKeyReused("this Idempotency-Key was used with a different request")
        if not earlier.bound:  # its job is being stored (or the upload fails and frees it)
            time.sleep(IDEMPOTENCY_POLL_S)
            continue
        try:
            deps.store.get_job(earlier.job_id)
            deps.store.idempotency.confirm(digest, earlier, *deps.store.replication)
            return earlier
        except NotFound:  # the job expired and its key is going with it: start afresh
            deps.store.idempotency.release(digest, earlier)
    raise Conflict(
        "the first request with this Idempotency-Key is still being processed; retry it shortly"
    )


def _replay(deps: Resources, earlier: IdempotencyClaim) -> JobCreated:
    """The answer of the upload that created the job (its current status). A generated
    secret is shown again: a replay is how a client that lost the first answer gets it."""
    job = deps.store.get_job(earlier.job_id)
    record = deps.store.deliveries.get_webhook(job.id)
    shown = None
    if record is not None:
        shown = WebhookCreated(
            url=record.url, secret=record.secret if record.secret_generated else None
        )
    return _created(job, shown, deps.store.invalid_documents(job.id))


def _created(
    job: JobRecord, webhook: WebhookCreated | None, failed: list[dict[str, object]]
) -> JobCreated:
    return JobCreated(
        id=job.id,
        status=job.status,
        model=job.model,
        documents=job.documents,
        documents_failed=len(failed),
        failed=[DocumentFailure.model_validate(f) for f in failed],
        created_at=job.created_at,
        webhook=webhook,
    )
