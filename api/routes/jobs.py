"""`/v1/jobs`: upload, status, results, cancel."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse
from kombu.exceptions import OperationalError
from prometheus_client import Counter, Histogram
from redis import RedisError

from api.deps import Deps
from api.uploads import NDJSON, parse_upload
from docq.errors import QueueUnavailable, ValidationError
from docq.queue import enqueue_shards
from docq.schemas import JobCreated, JobPublic, ResultsPage
from docq.store import Document

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

JOBS_CREATED = Counter("docq_jobs_created_total", "Jobs accepted", ["model"])
DOCUMENTS_ACCEPTED = Counter("docq_documents_accepted_total", "Documents accepted", ["model"])
UPLOAD_SECONDS = Histogram(
    "docq_upload_seconds",
    "Time to accept an upload (parse, validate, store, enqueue)",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)


@router.post("", status_code=202, response_model=JobCreated)
async def create_job(request: Request, deps: Deps) -> JobCreated:
    """Accept a bulk upload: validate everything, store it in shards, enqueue, answer at once."""
    with UPLOAD_SECONDS.time():
        upload = await parse_upload(request, deps.settings)
        model = upload.model or deps.settings.default_model
        if model is None:
            raise ValidationError(
                "no model given and no default model configured", {"field": "model"}
            )
        await run_in_threadpool(deps.catalog.require, model)
        documents = [Document(d.id, d.text) for d in upload.documents]
        job = await run_in_threadpool(deps.store.create_job, model, documents)
        try:
            await run_in_threadpool(enqueue_shards, deps.celery, job.id, job.shards)
        except (OperationalError, RedisError) as exc:  # leave nothing behind, tell the client
            await run_in_threadpool(deps.store.delete_job, job.id, job.shards)
            raise QueueUnavailable("could not enqueue the job; nothing was stored") from exc
    JOBS_CREATED.labels(model).inc()
    DOCUMENTS_ACCEPTED.labels(model).inc(job.documents)
    return JobCreated(
        id=job.id,
        status=job.status,
        model=job.model,
        documents=job.documents,
        created_at=job.created_at,
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
    """Cancel a job: shards not yet started are skipped; results already written stay."""
    deps.store.cancel(job_id)
    return JobPublic.from_record(deps.store.get_job(job_id))


def _cursor(raw: str | None) -> int:
    if raw is None or raw == "":
        return 0
    if not raw.isdigit():
        raise ValidationError(f"invalid cursor {raw!r}", {"field": "cursor"})
    return int(raw)
