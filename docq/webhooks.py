"""Webhooks, the parts both sides share: signing, the event body, the retry policy, and
dispatching a job's event to the `webhooks` queue (URL and secret checks: webhook_guard).

Deliveries follow the Standard Webhooks specification and are signed by its reference
library, `standardwebhooks`. A job has exactly one event (`job.succeeded`, `job.failed` or
`job.cancelled`), so its `webhook-id` is derived from the job id: every attempt and every
redelivery of it carries the same id, and a receiver that de-duplicates on it sees the
event once.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from celery import Celery
from standardwebhooks import Webhook

from docq.jobs import DeliveryState, EventType
from docq.queue import enqueue_webhook
from docq.schemas import JobPublic
from docq.store import JobStore

# --- signing and the event body -------------------------------------------------------


def sign(secret: str, webhook_id: str, payload: str, at: datetime) -> dict[str, str]:
    """The Standard Webhooks headers of one attempt (the timestamp is the attempt's)."""
    signature = Webhook(secret).sign(webhook_id, at, payload)
    return {
        "webhook-id": webhook_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature,
        "content-type": "application/json",
    }


def event_body(
    event: EventType, job: JobPublic, at: datetime, results: list[dict[str, Any]] | None = None
) -> str:
    """`{"type", "timestamp", "data": <job status>}`; `data.results` only when inlined."""
    data = job.model_dump(mode="json")
    if results is not None:
        data["results"] = results
    return json.dumps(
        {"type": event.value, "timestamp": at.isoformat(), "data": data},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def inline_results(
    results: Iterable[dict[str, Any]], max_bytes: int
) -> list[dict[str, Any]] | None:
    """All results when their JSON fits in `max_bytes`, else None (the receiver fetches)."""
    if max_bytes <= 0:
        return None
    out, size = [], 2
    for r in results:
        size += len(json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode()) + 1
        if size > max_bytes:
            return None
        out.append(r)
    return out


# --- retry policy -------------------------------------------------------------------


def classify(status_code: int) -> DeliveryState:
    """What an answer means: 2xx delivered; 429 and 5xx worth another attempt (PENDING);
    anything else (4xx, a redirect, which is never followed) final (FAILED)."""
    if 200 <= status_code < 300:
        return DeliveryState.DELIVERED
    if status_code == 429 or status_code >= 500:
        return DeliveryState.PENDING
    return DeliveryState.FAILED


def backoff_s(attempt: int, base_s: float, max_s: float, rng: random.Random | None = None) -> float:
    """Delay after failed attempt `attempt` (1-based): base * 2^(attempt-1), +-25% jitter,
    capped at max_s."""
    delay = base_s * 2 ** (attempt - 1)
    jitter = (rng or random).uniform(0.75, 1.25)
    return float(min(max_s, delay * jitter))


# --- dispatch -----------------------------------------------------------------------


def dispatch(store: JobStore, celery: Celery, job_id: str) -> bool:
    """Enqueue the delivery of a job's event, unless it has no webhook, no event yet, or
    its delivery is already enqueued. Returns whether it enqueued.

    The caller that made the job final calls it once; a redelivered task that finds the
    job final calls it again, which enqueues only if the first caller died before it could
    (the token is written after the enqueue, so a crash in between errs towards a second
    chain, which the first chain's claim then makes stale, never towards no delivery).
    """
    state, token = store.deliveries.dispatch_state(job_id)
    if state is not DeliveryState.PENDING or token:
        return False
    token = uuid.uuid4().hex
    enqueue_webhook(celery, job_id, token)
    store.deliveries.set_token_if_unset(job_id, token)
    return True
