"""The delivery state of a job's webhook event, on Redis: which delivery chain holds it,
its attempts, and redelivery. Claims and records are Lua scripts (lua/), so two copies of
a chain (a redelivered task) never both attempt; docq.webhooks and workers.webhooks drive
it. Every Redis failure raises StoreUnavailable (connection.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import redis

from docq import keys
from docq.jobs import Attempt, DeliveryState, WebhookRecord
from docq.store import connection
from docq.store.codec import decode, decode_values


@dataclass(frozen=True, slots=True)
class WebhookTarget:
    """Where a job's event goes and the secret that signs it."""

    url: str
    secret: str
    secret_generated: bool = False  # docq made it: the upload answer shows it


@dataclass(frozen=True, slots=True)
class Progress:
    """Where a job's delivery stands, as a sweeper judges whether its chain stalled."""

    state: DeliveryState | None  # None: the job has no webhook (or expired)
    token: str | None  # the chain that owns the round
    busy_until: float  # an attempt's lease (epoch s, Redis time); 0 when none is running
    next_at: float  # when the next attempt is due (epoch s, Redis time); 0 before the first


class Deliveries:
    """Webhook delivery state of jobs; shares the job store's client."""

    def __init__(self, client: redis.Redis) -> None:
        self.r = client
        self._claim_attempt = connection.script(client, "claim_attempt")
        self._finish_attempt = connection.script(client, "finish_attempt")
        self._restart_delivery = connection.script(client, "restart_delivery")

    def get_webhook(self, job_id: str) -> WebhookRecord | None:
        """The job's webhook and delivery state; None when the job has none (or expired)."""
        h = self.r.hgetall(keys.webhook(job_id))
        return WebhookRecord.from_redis(decode(h)) if h else None

    def webhook_attempts(self, job_id: str) -> list[Attempt]:
        """Every delivery attempt of the job's event, oldest first."""
        raw = self.r.lrange(keys.webhook_attempts(job_id), 0, -1)
        return [Attempt.from_json(a) for a in raw]

    def dispatch_state(self, job_id: str) -> tuple[DeliveryState | None, str | None]:
        """The delivery state and chain token of a job's event (None, None without webhook)."""
        state, token = decode_values(self.r.hmget(keys.webhook(job_id), ["state", "token"]))
        return (DeliveryState(state) if state else None, token)

    def progress(self, job_id: str) -> Progress:
        """The fields that say whether the delivery's chain is moving (workers/redelivery.py)."""
        fields = ["state", "token", "busy_until", "next_at"]
        state, token, busy, due = decode_values(self.r.hmget(keys.webhook(job_id), fields))
        return Progress(
            DeliveryState(state) if state else None,
            token or None,
            float(busy or 0),
            float(due or 0),
        )

    def set_token_if_unset(self, job_id: str, token: str) -> None:
        """Record the delivery chain that was just enqueued (unless one claimed the round)."""
        self.r.hsetnx(keys.webhook(job_id), "token", token)

    def freeze_payload(self, job_id: str, payload: str) -> str:
        """Store the event body once; every attempt and redelivery sends the stored one."""
        with self.r.pipeline(transaction=True) as p:
            p.hsetnx(keys.webhook(job_id), "payload", payload)
            p.hget(keys.webhook(job_id), "payload")
            _, stored = p.execute()
        return stored.decode() if stored is not None else payload

    def claim_attempt(self, job_id: str, token: str, lease_s: float) -> tuple[str, float]:
        """Claim the next attempt for chain `token`: ("claimed", attempt number), ("busy",
        seconds left on another copy's lease), or (reason, 0) when there is nothing to do."""
        outcome, value = self._claim_attempt(keys=[keys.webhook(job_id)], args=[token, lease_s])
        return outcome.decode(), float(value)

    def finish_attempt(
        self,
        job_id: str,
        token: str,
        attempt: Attempt,
        state: DeliveryState,
        retry_in_s: float = 0.0,
    ) -> bool:
        """Record an attempt and the delivery state after it (and, when still pending, that
        the next attempt is due in `retry_in_s`); False if the chain is stale."""
        done = self._finish_attempt(
            keys=[keys.webhook(job_id), keys.webhook_attempts(job_id)],
            args=[token, attempt.to_json(), state.value, repr(time.time()), retry_in_s],
        )
        return bool(done)

    def restart_delivery(self, job_id: str) -> tuple[DeliveryState | None, bool]:
        """Redeliver: a new round if the last one is over, a new chain if the current one is
        lost. Returns the state before and whether a delivery must now be dispatched."""
        before, restarted = self._restart_delivery(keys=[keys.webhook(job_id)])
        return (DeliveryState(before.decode()) if before else None), bool(restarted)
