"""Deliver a job's event to its webhook: the body of the `deliver_webhook` task.

One call makes at most one attempt and records its outcome; a failed one records when the
next is due, and the sweeper enqueues it then (workers/retries.py): no retry waits in a
worker. Attempts of a round are counted in Redis, not by Celery, so a duplicated or
redelivered message can neither exceed the attempt budget, nor send before its attempt is
due, nor send concurrently with its twin: every attempt is claimed first
(`JobStore.claim_attempt`).
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
from workers import webhook_client

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
        """How long a claimed attempt may take before another copy of the chain may assume
        it crashed: the attempt's deadline (DNS to the answer's headers, `timeout_s`), and as
        long again plus 10 s to build the payload and record the outcome."""
        return 2 * self.timeout_s + 10


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened, and when the next attempt is due (None: none will be)."""

    state: DeliveryState | None  # None when no attempt was made
    retry_in_s: float | None  # the sweeper enqueues the delivery then (workers/retries.py)
    reason: str


def deliver(
    store: JobStore,
    policy: DeliveryPolicy,
    job_id: str,
    token: str,
    *,
    client: httpx.Client | None = None,
    transport: httpx.BaseTransport | None = None,
    resolve: webhook_guard.Resolver = webhook_guard.system_resolver,
    rng: random.Random | None = None,
) -> Outcome:
    """Make the next attempt of delivery chain `token` for a job's event, if it is due.
    `client`: the process's (workers/app.py); without one, a client of its own is made for
    this attempt, over `transport` when given (a test's stand-in receiver)."""
    claimed, value = store.deliveries.claim_attempt(job_id, token, policy.lease_s)
    if claimed == "busy":  # the schedule holds the event until that copy's lease ends
        return Outcome(None, None, "another copy of this delivery is mid-attempt")
    if claimed == "early":  # a twin of a message already served: the schedule has it
        return Outcome(None, None, f"the next attempt is not due for {value:.1f}s")
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
    if client is None:
        with webhook_client.make_client(policy.timeout_s, transport) as own:
            status_code, error, state = _attempt(record, payload, at, policy, own, resolve)
    else:
        status_code, error, state = _attempt(record, payload, at, policy, client, resolve)
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
    client: httpx.Client,
    resolve: webhook_guard.Resolver,
) -> tuple[int | None, str | None, DeliveryState]:
    """One signed POST, over by the policy's deadline: (status code, error, state after it).
    The URL meets the SSRF guard again (DNS may have changed since the upload), every
    address it resolves to is checked, and the connection goes to a checked address: the
    first that accepts one, in the resolver's order. Redirects are not followed."""
    assert record.webhook_id is not None
    deadline = time.monotonic() + policy.timeout_s
    try:
        target = webhook_guard.check_url(record.url)
        try:
            found = webhook_client.resolve_within(resolve, target.host, target.port, deadline)
        except (OSError, UnicodeError) as exc:  # DNS may heal (TimeoutError is an OSError)
            return None, f"DNS: {exc}", DeliveryState.PENDING
        addresses = webhook_guard.check_addresses(
            target, found, allow_private=policy.allow_private_networks
        )
    except WebhookRefused as exc:
        return None, f"refused: {exc.message}", DeliveryState.FAILED
    signature = webhooks.sign(record.secret, record.webhook_id, payload, at)
    unreachable: list[str] = []
    with webhook_client.within(deadline):
        for address in addresses:
            url, headers, extensions = webhook_guard.pinned_request(target, address)
            headers |= signature | {"user-agent": USER_AGENT}
            try:
                with client.stream(
                    "POST", url, content=payload.encode(), headers=headers, extensions=extensions
                ) as response:
                    code = response.status_code  # the body is not read: only the status matters
                break
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:  # try the next address
                unreachable.append(f"{type(exc).__name__}: {exc}")
            except httpx.TimeoutException as exc:
                late = f"timeout: no answer within the {policy.timeout_s:g}s deadline"
                return None, f"{late} ({type(exc).__name__})", DeliveryState.PENDING
            except httpx.TransportError as exc:
                return None, f"{type(exc).__name__}: {exc}", DeliveryState.PENDING
            except (httpx.HTTPError, httpx.InvalidURL) as exc:  # the same request cannot help
                return None, f"{type(exc).__name__}: {exc}", DeliveryState.FAILED
        else:
            if len(addresses) > 1:
                unreachable = [f"{a}: {e}" for a, e in zip(addresses, unreachable, strict=True)]
            return None, "; ".join(unreachable), DeliveryState.PENDING
    state = webhooks.classify(code)
    return code, None if state is DeliveryState.DELIVERED else f"HTTP {code}", state
