"""Deliver a job's event to its webhook: the body of the `deliver_webhook` task.

One call makes at most one attempt and says what the task does next (nothing, or run
again after a delay, through Celery's retry). Attempts of a round are counted in Redis, not
by Celery, so a duplicated or redelivered message can neither exceed the attempt budget nor
send concurrently with its twin: every attempt is claimed first (`JobStore.claim_attempt`).
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx

from docq import __version__, webhook_guard, webhooks
from docq.config import Settings
from docq.errors import NotFound, WebhookRefused
from docq.jobs import Attempt, DeliveryState, WebhookRecord
from docq.schemas import JobPublic
from docq.store import JobStore

log = logging.getLogger(__name__)

USER_AGENT = f"docq-webhooks/{__version__}"


@dataclass(frozen=True, slots=True)
class DeliveryPolicy:
    """The delivery settings, in one value a test can build."""

    timeout_s: float
    max_attempts: int
    backoff_s: float
    backoff_max_s: float
    allow_private_networks: bool
    inline_results_max_bytes: int

    @classmethod
    def from_settings(cls, s: Settings) -> DeliveryPolicy:
        return cls(
            timeout_s=s.webhook_timeout_s,
            max_attempts=s.webhook_max_attempts,
            backoff_s=s.webhook_backoff_s,
            backoff_max_s=s.webhook_backoff_max_s,
            allow_private_networks=s.webhook_allow_private_networks,
            inline_results_max_bytes=s.webhook_inline_results_max_bytes,
        )

    @property
    def lease_s(self) -> float:
        """How long a claimed attempt may take (DNS, connect, send, read) before another copy
        of the chain may assume it crashed."""
        return 4 * self.timeout_s + 10


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened, and when the task must run again (None: it is done)."""

    state: DeliveryState | None  # None when no attempt was made
    retry_in_s: float | None
    reason: str


def deliver(
    store: JobStore,
    policy: DeliveryPolicy,
    job_id: str,
    token: str,
    *,
    transport: httpx.BaseTransport | None = None,
    resolve: webhook_guard.Resolver = webhook_guard.system_resolver,
    rng: random.Random | None = None,
) -> Outcome:
    """Make the next attempt of delivery chain `token` for a job's event, if it is due."""
    claimed, value = store.deliveries.claim_attempt(job_id, token, policy.lease_s)
    if claimed == "busy":  # a twin of this message is mid-attempt: look again after its lease
        return Outcome(None, value + 0.5, "another copy of this delivery is mid-attempt")
    if claimed != "claimed":
        return Outcome(None, None, f"nothing to do ({claimed})")
    number = int(value)
    record = store.deliveries.get_webhook(job_id)
    if record is None or record.event is None or record.webhook_id is None:
        return Outcome(None, None, "the job expired")
    try:
        payload = record.payload or store.deliveries.freeze_payload(
            job_id, _payload(store, job_id, record, policy)
        )
    except NotFound:
        return Outcome(None, None, "the job expired")

    at = datetime.now(UTC)
    started = time.perf_counter()
    status_code, error, state = _attempt(record, payload, at, policy, transport, resolve)
    duration_ms = round((time.perf_counter() - started) * 1000, 3)
    if state is DeliveryState.PENDING and record.round_attempts >= policy.max_attempts:
        state = DeliveryState.DEAD_LETTERED
    attempt = Attempt(number, at, duration_ms, status_code, error)
    delay = webhooks.backoff_s(record.round_attempts, policy.backoff_s, policy.backoff_max_s, rng)
    if not store.deliveries.finish_attempt(job_id, token, attempt, state, delay):
        return Outcome(None, None, "the delivery was superseded or the job expired")

    if state is DeliveryState.PENDING:
        log.info(
            "job %s: webhook attempt %d failed (%s); again in %.1fs", job_id, number, error, delay
        )
        return Outcome(state, delay, error or "")
    if state is DeliveryState.DEAD_LETTERED:
        log.error(
            "job %s: webhook dead-lettered after %d attempts (last: %s)",
            job_id,
            record.round_attempts,
            error,
        )
    elif state is DeliveryState.FAILED:
        log.warning("job %s: webhook failed for good: %s", job_id, error)
    return Outcome(state, None, error or "delivered")


def _payload(store: JobStore, job_id: str, record: WebhookRecord, policy: DeliveryPolicy) -> str:
    """The event body: the job's status now (it is final), and its results when small."""
    assert record.event is not None
    job = store.get_job(job_id)
    results = webhooks.inline_results(store.iter_results(job), policy.inline_results_max_bytes)
    return webhooks.event_body(record.event, JobPublic.from_record(job), datetime.now(UTC), results)


def _attempt(
    record: WebhookRecord,
    payload: str,
    at: datetime,
    policy: DeliveryPolicy,
    transport: httpx.BaseTransport | None,
    resolve: webhook_guard.Resolver,
) -> tuple[int | None, str | None, DeliveryState]:
    """One signed POST: (status code, error, state after it). The URL meets the SSRF guard
    again (DNS may have changed since the upload) and the connection goes to the address
    that was checked. Redirects are not followed."""
    assert record.webhook_id is not None
    try:
        target = webhook_guard.check_url(record.url)
        try:
            addresses = resolve(target.host, target.port)
        except (OSError, UnicodeError) as exc:  # DNS may heal: retry
            return None, f"DNS: {exc}", DeliveryState.PENDING
        address = webhook_guard.check_addresses(
            target, addresses, allow_private=policy.allow_private_networks
        )
    except WebhookRefused as exc:
        return None, f"refused: {exc.message}", DeliveryState.FAILED
    url, headers, extensions = webhook_guard.pinned_request(target, address)
    headers |= webhooks.sign(record.secret, record.webhook_id, payload, at)
    headers["user-agent"] = USER_AGENT
    try:
        with (
            httpx.Client(
                timeout=policy.timeout_s,
                follow_redirects=False,
                trust_env=False,  # no proxy from the environment: the guard checked this host
                transport=transport,
            ) as client,
            client.stream(
                "POST", url, content=payload.encode(), headers=headers, extensions=extensions
            ) as response,
        ):
            code = response.status_code  # the body is not read: only the status matters
    except httpx.TimeoutException as exc:
        return (
            None,
            f"timeout after {policy.timeout_s}s ({type(exc).__name__})",
            DeliveryState.PENDING,
        )
    except httpx.TransportError as exc:
        return None, f"{type(exc).__name__}: {exc}", DeliveryState.PENDING
    except (httpx.HTTPError, httpx.InvalidURL) as exc:  # retrying the same request cannot help
        return None, f"{type(exc).__name__}: {exc}", DeliveryState.FAILED
    state = webhooks.classify(code)
    return code, None if state is DeliveryState.DELIVERED else f"HTTP {code}", state
