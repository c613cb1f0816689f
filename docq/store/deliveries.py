"""The delivery state of a job's webhook event, on Redis: which delivery chain holds it,
its attempts, redelivery, and when a sweeper must next enqueue it. Claims and records are
Lua scripts (lua/), so two copies of a chain (a redelivered task) never both attempt;
docq.webhooks and workers.webhooks drive it. Every Redis failure raises StoreUnavailable
(connection.py).

The schedule (keys.webhooks_due) holds each event that waits for an attempt: a claimed
attempt puts it there until its lease ends (a worker that dies mid-attempt leaves it due
then), a failed one until its retry is due, and the sweeper that enqueues it moves it on by
its re-check interval (a message lost on its way leaves it due again); a settled event
leaves it. The schedule is written beside the job's scripts, not inside them: it is not
under the job's hash tag (a Redis Cluster keeps it elsewhere).
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
        self._claim_due = connection.script(client, "claim_due")
        self._drop_claim = connection.script(client, "drop_claim")

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
        """Where the delivery stands: its chain, a running attempt's lease, its next retry."""
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
        seconds left on another copy's lease), ("early", seconds until it is due), or (reason,
        0) when there is nothing to do. The event is scheduled first, at the end of the lease
        at least (GT keeps a later retry's time), so that an attempt whose worker dies comes
        due again."""
        self.r.zadd(keys.webhooks_due(), {job_id: time.time() + lease_s}, gt=True)
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
        if done and state is DeliveryState.PENDING:
            self.r.zadd(keys.webhooks_due(), {job_id: time.time() + retry_in_s})
        elif done:
            self.r.zrem(keys.webhooks_due(), job_id)
        return bool(done)

    # --- the schedule -------------------------------------------------------------------
    def claim_due(self, now: float, until: float, limit: int = 500) -> list[tuple[str, float]]:
        """Claim the events due by `now` until `until` (so that two sweepers never take the
        same one, and one that is lost after this comes due again): `(job_id, claim)` each."""
        members = self._claim_due(keys=[keys.webhooks_due()], args=[repr(now), repr(until), limit])
        return [(raw.decode(), until) for raw in members]

    def unschedule(self, job_id: str, claim: float) -> None:
        """Forget a claimed event that needs no attempt (settled, or expired), unless an
        attempt scheduled it anew since the claim."""
        self._drop_claim(keys=[keys.webhooks_due()], args=[job_id, repr(claim)])

    def scheduled(self, job_id: str) -> bool:
        """Whether the schedule holds the job's event (a sweeper enqueues it when due)."""
        return self.r.zscore(keys.webhooks_due(), job_id) is not None

    def restart_delivery(self, job_id: str) -> tuple[DeliveryState | None, bool]:
        """Redeliver: a new round if the last one is over, a new chain if the current one is
        lost. Returns the state before and whether a delivery must now be dispatched."""
        before, restarted = self._restart_delivery(keys=[keys.webhook(job_id)])
        return (DeliveryState(before.decode()) if before else None), bool(restarted)
