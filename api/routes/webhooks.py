"""`/v1/jobs/{id}/webhook`: a job's webhook delivery, every attempt of it, and redelivery."""

from __future__ import annotations

import time

from fastapi import APIRouter

from api.auth import Tenant
from api.deps import Deps, Resources
from docq import webhooks
from docq.errors import Conflict, NotFound, QueueUnavailable
from docq.jobs import DeliveryState, WebhookRecord
from docq.schemas import WebhookPublic

router = APIRouter(prefix="/v1/jobs/{job_id}/webhook", tags=["webhooks"])


def _record(deps: Resources, tenant: str, job_id: str) -> WebhookRecord:
    deps.store.get_job(job_id, tenant=tenant)  # 404: unknown, expired or another tenant's
    record = deps.store.deliveries.get_webhook(job_id)
    if record is None:
        raise NotFound(f"job {job_id!r} has no webhook", {"job_id": job_id})
    return record


def _public(deps: Resources, tenant: str, job_id: str) -> WebhookPublic:
    record = _record(deps, tenant, job_id)
    return WebhookPublic.from_record(record, deps.store.deliveries.webhook_attempts(job_id))


@router.get("", response_model=WebhookPublic)
def get_webhook(job_id: str, deps: Deps, tenant: Tenant) -> WebhookPublic:
    """The job's webhook URL, its event, the delivery state and every attempt so far."""
    return _public(deps, tenant, job_id)


@router.post("/redeliver", status_code=202, response_model=WebhookPublic)
def redeliver(job_id: str, deps: Deps, tenant: Tenant) -> WebhookPublic:
    """Send the job's event again, with a fresh attempt budget.

    It is the same event, so it keeps its `webhook-id` (a receiver that already accepted
    it may de-duplicate it). A finished delivery (delivered, failed, dead-lettered) starts a
    new round; a pending one whose delivery task was lost is taken over. 409 while the job
    runs, while an attempt runs, or while a retry is scheduled.
    """
    _record(deps, tenant, job_id)
    before, restarted = deps.store.deliveries.restart_delivery(job_id)
    if before is DeliveryState.WAITING:
        raise Conflict("the job is not final yet: it has no event to deliver", {"job_id": job_id})
    if not restarted:
        raise Conflict(
            "the event is still being delivered (an attempt is running or a retry is "
            "scheduled); redeliver once that is over",
            {"job_id": job_id},
        )
    deps.store.recovery.watch(job_id, time.time())  # the audits see this round through
    try:
        webhooks.dispatch(deps.store, deps.celery, job_id)
    except QueueUnavailable as exc:
        raise QueueUnavailable("the redelivery could not be enqueued; repeat the request") from exc
    return _public(deps, tenant, job_id)
