"""Settings: the webhook deliveries, and the default webhook of jobs that name none."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, Field, ValidationInfo, field_validator

from docq.errors import WebhookRefused
from docq.webhook_guard import check_secret, check_url


class Webhooks(BaseModel):
    """Settings: the default webhook, and how deliveries are timed and retried."""

    webhook_url: str | None = Field(
        None,
        description="Tenant-wide default webhook for jobs that name none. One receiver for "
        "every job is simpler to run; a job's own webhook still wins.",
    )
    webhook_secret: str | None = Field(
        None,
        description="`whsec_` secret of the default webhook (required with webhook_url). It is "
        "copied into each job at upload, so a rotation applies to new jobs only.",
    )
    webhook_allow_private_networks: bool = Field(
        False,
        description="Allow webhook URLs that resolve to loopback, private or link-local "
        "addresses. Needed for a local receiver; on a shared service it lets any client make "
        "docq call internal hosts (SSRF), so keep it off there.",
    )
    webhook_timeout_s: float = Field(
        10.0,
        gt=0,
        description="Deadline of one attempt, whole: DNS, connect, TLS, sending, and the "
        "answer's status and headers, however slowly a receiver trickles them (an attempt's "
        "lease is twice this plus 10 s, so no second copy starts while it runs). Short keeps a "
        "slow receiver from holding a delivery worker; too short fails receivers that are "
        "merely slow (they are retried).",
    )
    webhook_max_attempts: int = Field(
        10,
        ge=1,
        description="Attempts before an event is dead-lettered. With the default backoff, 10 "
        "attempts span about an hour of receiver outage.",
    )
    webhook_backoff_s: float = Field(
        7.0,
        gt=0,
        description="Delay before the second attempt; doubles each attempt, with +-25% jitter "
        "so that the retries of an outage do not all arrive in the same second.",
    )
    webhook_backoff_max_s: float = Field(
        1800.0,
        description="Cap on one retry delay. A waiting retry is held by no worker: the job "
        "store schedules it, and a sweeper enqueues it when due (workers/retries.py).",
    )
    webhook_stall_s: float = Field(
        30.0,
        gt=0,
        description="A due delivery that a sweeper enqueued and no attempt has claimed this "
        "many seconds later (its message lost, or its worker dead before the attempt) is "
        "enqueued again. Shorter delivers sooner after a crash; shorter than the webhooks "
        "queue's wait enqueues twins, which send nothing (the attempt claim) but cost a "
        "message each.",
    )
    webhook_inline_results_max_bytes: int = Field(
        0,
        description="Put the results in the event's `data.results` when their JSON is at most "
        "this many bytes. Saves the receiver a round trip for small jobs, at the cost of "
        "larger payloads; 0 never inlines.",
    )

    @field_validator("webhook_url")
    @classmethod
    def _usable_url(cls, url: str | None) -> str | None:
        if not url:
            return None  # DOCQ_WEBHOOK_URL= (empty): no default webhook
        _refuse_as_value_error(check_url, url)
        return url

    @field_validator("webhook_secret")
    @classmethod
    def _secret_of_the_url(cls, secret: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("webhook_url") is None:  # none, or refused above (its own error)
            return secret
        if not secret:
            raise ValueError("webhook_url needs webhook_secret (a whsec_... secret)")
        _refuse_as_value_error(check_secret, secret)
        return secret


def _refuse_as_value_error(check: Callable[[str], object], value: str) -> None:
    """Run a webhook_guard check; its refusal becomes the field's error (pydantic's kind)."""
    try:
        check(value)
    except WebhookRefused as exc:
        raise ValueError(f"default webhook: {exc.message}") from None
