"""`/v1/jobs`: upload (with an optional Idempotency-Key), status, results, cancel."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse
from kombu.exceptions import OperationalError
from prometheus_client import Counter, Histogram
from redis import RedisError

from api.deps import Deps, Resources
from api.uploads import NDJSON, parse_upload
from docq import webhooks
from docq.config import Settings
from docq.errors import Conflict, IdempotencyKeyReused, NotFound, QueueUnavailable, ValidationError
from docq.jobs import JobRecord
from docq.queue import enqueue_shards
from docq.schemas import JobCreate, JobCreated, JobPublic, ResultsPage, WebhookCreated
from docq.store import Document, IdempotencyClaim, WebhookTarget

log = logging.getLogger(__name__)

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

JOBS_CREATED = Counter("docq_jobs_created_total", "Jobs accepted", ["model"])
DOCUMENTS_ACCEPTED = Counter("docq_documents_accepted_total", "Documents accepted", ["model"])
UPLOAD_SECONDS = Histogram(
    "docq_upload_seconds",
    "Time to accept an upload (parse, validate, store, enqueue)",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)


IdempotencyKey = Annotated[
    str | None,
    Header(
        min_length=1,
        max_length=255,
        description="Makes a retried upload safe: the same key with the same request "
        "answers 200 with the job it created; with a different request, 409.",
    ),
]


@router.post("", status_code=202, response_model=JobCreated)
async def create_job(
    request: Request, response: Response, deps: Deps, idempotency_key: IdempotencyKey = None
) -> JobCreated:
    """Accept a bulk upload: validate everything, store it in shards, enqueue, answer at once."""
    with UPLOAD_SECONDS.time():
        upload = await parse_upload(request, deps.settings)
        model = upload.model or deps.settings.default_model
        if model is None:
            raise ValidationError(
                "no model given and no default model configured", {"field": "model"}
            )
        webhook = await run_in_threadpool(_webhook_target, upload, deps.settings)
        await run_in_threadpool(deps.catalog.require, model)
        documents = [Document(d.id, d.text) for d in upload.documents]
        if idempotency_key is None:
            job = await run_in_threadpool(_create, deps, model, documents, webhook, None)
        else:
            digest = webhooks.key_digest(idempotency_key)
            claim = IdempotencyClaim(
                job_id=deps.store.new_job_id(),
                fingerprint=webhooks.fingerprint(
                    model,
                    ((d.id, d.text) for d in documents),
                    webhook.url if webhook else None,
                ),
                bound=False,
            )
            earlier = await run_in_threadpool(_claim, deps, digest, claim)
            if earlier is not None:
                response.status_code = 200
                return await run_in_threadpool(_replay, deps, earlier)
            job = await run_in_threadpool(_create, deps, model, documents, webhook, (digest, claim))
    JOBS_CREATED.labels(model).inc()
    DOCUMENTS_ACCEPTED.labels(model).inc(job.documents)
    shown = None
    if webhook is not None:
        shown = WebhookCreated(
            url=webhook.url, secret=webhook.secret if webhook.secret_generated else None
        )
    return _created(job, shown)


def _webhook_target(upload: JobCreate, settings: Settings) -> WebhookTarget | None:
    """The job's webhook: its own (URL guarded, secret checked or generated), else the
    tenant's default, else none."""
    if upload.webhook is not None:
        url = webhooks.guard(
            upload.webhook.url, allow_private=settings.webhook_allow_private_networks
        )
        if upload.webhook.secret is None:
            return WebhookTarget(url, webhooks.generate_secret(), secret_generated=True)
        return WebhookTarget(url, webhooks.check_secret(upload.webhook.secret))
    if settings.webhook_url is not None and settings.webhook_secret is not None:
        # The operator's URL is trusted here; it meets the guard again at each delivery.
        return WebhookTarget(settings.webhook_url, settings.webhook_secret)
    return None


def _create(
    deps: Resources,
    model: str,
    documents: list[Document],
    webhook: WebhookTarget | None,
    idempotency: tuple[str, IdempotencyClaim] | None,
) -> JobRecord:
    """Store the job and enqueue its shards; on failure leave nothing behind (nor the key)."""
    job_id = idempotency[1].job_id if idempotency else None
    try:
        small = len(documents) <= deps.settings.small_job_max_documents
        job = deps.store.create_job(
            model, documents, webhook=webhook, job_id=job_id, priority=small
        )
        try:
            enqueue_shards(deps.celery, job.id, job.shards, priority=job.priority)
        except (OperationalError, RedisError) as exc:  # leave nothing behind, tell the client
            deps.store.delete_job(job.id, job.shards)
            raise QueueUnavailable("could not enqueue the job; nothing was stored") from exc
    except BaseException:
        if idempotency is not None:
            deps.store.release_idempotency_key(*idempotency)
        raise
    if idempotency is not None and not deps.store.bind_idempotency_key(*idempotency):
        log.warning("job %s: its Idempotency-Key claim was lost before it was bound", job.id)
    return job


def _claim(deps: Resources, digest: str, claim: IdempotencyClaim) -> IdempotencyClaim | None:
    """Claim the key for this upload, or the earlier claim when it is the same request.

    Raises IdempotencyKeyReused when the key came with a different request, Conflict while
    the first request with it is still being stored.
    """
    for _ in range(3):
        earlier = deps.store.claim_idempotency_key(digest, claim)
        if earlier is None:
            return None
        if earlier.fingerprint != claim.fingerprint:
            raise IdempotencyKeyReused(
                "this Idempotency-Key was used with a different request",
                {"job_id": earlier.job_id},
            )
        if not earlier.bound:
            raise Conflict(
                "the first request with this Idempotency-Key is still being processed; "
                "retry it shortly",
                {"job_id": earlier.job_id},
            )
        try:
            deps.store.get_job(earlier.job_id)
            return earlier
        except NotFound:  # the job expired and its key is going with it: start afresh
            deps.store.release_idempotency_key(digest, earlier)
    raise Conflict("this Idempotency-Key is contended; retry it shortly")


def _replay(deps: Resources, earlier: IdempotencyClaim) -> JobCreated:
    """The answer of the upload that created the job (its current status). A generated
    secret is shown again: a replay is how a client that lost the first answer gets it."""
    job = deps.store.get_job(earlier.job_id)
    record = deps.store.get_webhook(job.id)
    shown = None
    if record is not None:
        shown = WebhookCreated(
            url=record.url, secret=record.secret if record.secret_generated else None
        )
    return _created(job, shown)


def _created(job: JobRecord, webhook: WebhookCreated | None) -> JobCreated:
    return JobCreated(
        id=job.id,
        status=job.status,
        model=job.model,
        documents=job.documents,
        created_at=job.created_at,
        webhook=webhook,
    )


@router.get("/{job_id}", response_model=JobPublic)
def get_job(job_id: str, deps: Deps) -> JobPublic:
    """A job's status and progress."""
    return JobPublic.from_record(deps.store.get_job(job_id))


@router.get("/{job_id}/results", response_model=ResultsPage)
def get_results(
    job_id: str,
    request: Request,
    deps: Deps,
    limit: Annotated[int, Query(ge=1)] = 100,
    cursor: Annotated[str | None, Query()] = None,
) -> Response | ResultsPage:
    """Results in upload order, a page at a time; all of them as NDJSON on `Accept: x-ndjson`."""
    job = deps.store.get_job(job_id)
    if NDJSON in request.headers.get("accept", ""):
        lines: Iterator[bytes] = (
            json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in deps.store.iter_results(job)
        )
        return StreamingResponse(lines, media_type=NDJSON)
    start = _cursor(cursor)
    limit = min(limit, deps.settings.results_page_max)
    data, nxt = deps.store.results_page(job, start, limit)
    return ResultsPage(data=data, next_cursor=None if nxt is None else str(nxt))


@router.delete("/{job_id}", response_model=JobPublic)
def cancel_job(job_id: str, deps: Deps) -> JobPublic:
    """Cancel a job: shards not yet started are skipped; results already written stay.

    The job's `job.cancelled` event is enqueued by the call that cancels; a repeated DELETE
    enqueues it only if that never happened (e.g. the broker was down), never twice.
    """
    deps.store.request_cancel(job_id)
    try:
        webhooks.dispatch(deps.store, deps.celery, job_id)
    except (OperationalError, RedisError) as exc:
        raise QueueUnavailable(
            "the job is cancelled but its webhook could not be enqueued; repeat the DELETE"
        ) from exc
    return JobPublic.from_record(deps.store.get_job(job_id))


def _cursor(raw: str | None) -> int:
    if raw is None or raw == "":
        return 0
    if not raw.isdigit():
        raise ValidationError(f"invalid cursor {raw!r}", {"field": "cursor"})
    return int(raw)
