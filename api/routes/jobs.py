"""`/v1/jobs`: upload (with an optional Idempotency-Key), status, results, cancel."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse
from prometheus_client import Histogram

from api import errors, manifests, submissions
from api.auth import Tenant
from api.deps import Deps
from api.streaming import drop_unclaimed
from api.uploads import NDJSON, parse_upload
from docq import webhooks
from docq.errors import QueueUnavailable, ValidationError
from docq.metrics import JOBS_FINISHED
from docq.schemas import JobCreated, JobPublic, OnInvalid, ResultsPage

log = logging.getLogger(__name__)

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

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


# api/uploads.py reads the body itself (three formats), so FastAPI cannot infer it: declare
# it, so that /docs shows a body to edit and sends it.
# A document is `{"id", "text"}`, or a file `{"id", "content": base64, "content_type"}`
# (PDF, PNG, JPEG, TIFF, DOCX, HTML, text: judged from the bytes, api/files.py). The
# multipart form is described in the operation's text, not as a schema: schemathesis's
# generated multipart bodies hold values httpx cannot send (tests/api/test_schema.py).
UPLOAD_BODY = {
    "required": True,
    "content": {
        "application/json": {
            "schema": {"type": "object"},
            "example": {
                "model": "doc-type",
                "documents": [
                    {"id": "a", "text": "INVOICE 4711"},
                    {
                        "id": "b.html",
                        "content": "PHA+SU5WT0lDRSA0NzEyPC9wPg==",
                        "content_type": "text/html",
                    },
                ],
            },
        },
        NDJSON: {"schema": {"type": "string"}, "example": '{"id": "a", "text": "INVOICE 4711"}\n'},
    },
}


@router.post(
    "",
    status_code=202,
    response_model=JobCreated,
    openapi_extra={"requestBody": UPLOAD_BODY},
    # A replay of an Idempotency-Key answers 200 with the job it made; the rest are refusals.
    responses={200: {"model": JobCreated}, **errors.responses(400, 409, 413, 415, 422, 429)},
)
async def create_job(
    request: Request,
    response: Response,
    deps: Deps,
    tenant: Tenant,
    idempotency_key: IdempotencyKey = None,
    on_invalid: Annotated[
        OnInvalid,
        Query(
            description="`accept` (default): a bad file is accepted as a failed document "
            "(listed in `failed`, its result carries `error_code`) and the rest runs. "
            "`reject`: all or nothing, one 422 (`invalid_documents`) lists every bad file."
        ),
    ] = OnInvalid.ACCEPT,
) -> JobCreated:
    """Accept a bulk upload: validate everything, store it in shards, enqueue, answer at once.

    Bodies: JSON `{"model", "documents": [...], "webhook"}`, NDJSON (one document a line,
    `?model=`), or multipart/form-data with one `files` part per document (id = its file
    name) and `model`, `webhook_url`, `webhook_secret` fields. A document is text
    (`{"id", "text"}`) or a file: a multipart part, or `{"id", "content": <base64>,
    "content_type"}`. Files may be PDF, PNG, JPEG, TIFF, DOCX, HTML or plain text, judged
    from their bytes.

    What is wrong with the request refuses it whole, nothing created: a malformed body, a
    body or document count over the limits, an unknown model, a missing or duplicate id, a
    bad webhook, the tenant's quota. What is wrong with one file (a type docq does not read,
    bytes that are not the declared type, empty, not UTF-8, over `max_file_bytes`) makes it
    a failed document: the answer counts it in `documents_failed` and lists it in `failed`,
    its result carries `error` and `error_code`, and the rest of the upload runs; files
    read later that prove encrypted, truncated, a bomb or over a page or pixel limit fail
    the same way, with codes of the same vocabulary. `?on_invalid=reject` asks for all or
    nothing instead. Files are read into text by the extract workers; each result says
    `pages`, `extraction` (text, ocr, mixed) and `chars`.

    A JSON body `{"model", "manifest": {"objects": [...]} | {"prefix": "..."}, "results",
    "webhook"}` names objects of the tenant's store instead (docs/manifests.md): files, or
    NDJSON objects of many documents; the workers read them.
    """
    with UPLOAD_SECONDS.time():
        if await _manifest_body(request, deps.settings.max_upload_bytes):
            body = await request.body()
            submitted = await run_in_threadpool(
                manifests.submit_manifest, deps, tenant, manifests.parse(body), idempotency_key
            )
            response.status_code = 200 if submitted.replayed else 202
            return submitted.answer
        upload = await parse_upload(request, deps.settings)
        try:
            submitted = await run_in_threadpool(
                submissions.submit, deps, tenant, upload, idempotency_key, on_invalid
            )
        except Exception:  # refused after parsing: its streamed blobs are nobody's
            await run_in_threadpool(drop_unclaimed, deps.store, upload)
            raise
    if submitted.replayed:  # the earlier upload's job answers: this one's blobs are nobody's
        await run_in_threadpool(drop_unclaimed, deps.store, upload)
        response.status_code = 200
    return submitted.answer


async def _manifest_body(request: Request, limit: int) -> bool:
    """Whether the upload is a manifest (docs/manifests.md): a JSON body with a top-level
    `manifest`. Only a small JSON body (a declared length up to MANIFEST_PEEK_BYTES) is
    looked at; it is kept for the upload's parser (Starlette replays `request.body()`)."""
    declared = request.headers.get("content-length", "")
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/json" or not declared.isdigit():
        return False
    if int(declared) > min(limit, MANIFEST_PEEK_BYTES):
        return False
    return manifests.is_manifest(await request.body())


# The largest body looked at for a manifest: a manifest of 10,000 object names fits; a JSON
# upload of documents larger than this is not read twice.
MANIFEST_PEEK_BYTES = 4 * 1024 * 1024


@router.get("/{job_id}", response_model=JobPublic)
def get_job(job_id: str, deps: Deps, tenant: Tenant) -> JobPublic:
    """A job's status and progress."""
    return JobPublic.from_record(deps.store.get_job(job_id, tenant=tenant))


@router.get("/{job_id}/results", response_model=ResultsPage)
def get_results(
    job_id: str,
    request: Request,
    deps: Deps,
    tenant: Tenant,
    limit: Annotated[int, Query(ge=1)] = 100,
    cursor: Annotated[str | None, Query()] = None,
) -> Response | ResultsPage:
    """Results in upload order, a page at a time; all of them as NDJSON on `Accept: x-ndjson`."""
    job = deps.store.get_job(job_id, tenant=tenant)
    if NDJSON in request.headers.get("accept", ""):
        lines: Iterator[bytes] = (
            json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in deps.store.iter_results(job)
        )
        return StreamingResponse(lines, media_type=NDJSON)
    start = _cursor(cursor)
    if limit > deps.settings.results_page_max:
        raise ValidationError(
            f"limit {limit} is above the largest page, {deps.settings.results_page_max}",
            {"field": "limit", "max": deps.settings.results_page_max},
        )
    data, nxt = deps.store.results_page(job, start, limit)
    return ResultsPage(data=data, next_cursor=None if nxt is None else str(nxt))


@router.delete("/{job_id}", response_model=JobPublic)
def cancel_job(job_id: str, deps: Deps, tenant: Tenant) -> JobPublic:
    """Cancel a job: shards not yet started are skipped; results already written stay.

    The job's `job.cancelled` event is enqueued by the call that cancels; a repeated DELETE
    enqueues it only if that never happened (e.g. the broker was down), never twice.
    """
    job = deps.store.get_job(job_id, tenant=tenant)  # another tenant's: 404, uncancelled
    if deps.store.request_cancel(job_id).performed:
        JOBS_FINISHED.labels(job.model, "cancelled").inc()
    try:  # a manifest job's results are written back first, and its event names them
        if not manifests.write_back_after_cancel(deps, job_id):
            webhooks.dispatch(deps.store, deps.celery, job_id)
    except QueueUnavailable as exc:
        raise QueueUnavailable(
            "the job is cancelled but its webhook could not be enqueued; repeat the DELETE"
        ) from exc
    return JobPublic.from_record(deps.store.get_job(job_id))


def _cursor(raw: str | None) -> int:
    if raw is None or raw == "":
        return 0
    if not (raw.isascii() and raw.isdigit()):  # isdigit alone takes "²"
        raise ValidationError(f"invalid cursor {raw!r}", {"field": "cursor"})
    return int(raw)
