"""What the sweeper needs to recover work a dead process left behind, on Redis.

- Shard leases: a worker holds a lease on each shard it runs (a sorted set, member
  `job_id shard`, score the time it expires) and renews it while it works. A lease that
  expired belongs to a dead worker (or one stalled for the whole lease): its shard is
  enqueued again.
- Audited jobs: a job is listed from its creation until it is final and its webhook event
  settled; workers/audit.py looks for its shards' (then its event's) messages.
- Unenqueued jobs: a job is listed (with the time it was written) in the same write that
  creates it, and unlisted once its shards are enqueued. A job still listed after the grace
  time was written by an API process that died (or lost the broker) before enqueueing.

Both are claimed by moving their score forward (claim_due.lua) and dropped only once the
work is enqueued again (drop_claim.lua), so a sweeper dying in between loses nothing and
two sweepers never take the same entry. Times are the processes' clocks (epoch seconds):
they must agree to within a small part of the lease. Every Redis failure raises
StoreUnavailable (connection.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

import redis

from docq import keys
from docq.store import connection

# Entries claimed by one sweep at most: a sweep stays short, the next takes the rest.
CLAIM_BATCH = 200

# Among the shards an audit found missing (`missing_again`), the job's webhook event.
EVENT = -1


def _member(job_id: str, n: int) -> str:
    return f"{job_id} {n}"


class Recovery:
    """Shard leases and the list of jobs not yet enqueued; shares the job store's client."""

    def __init__(self, client: redis.Redis, *, ttl_s: int) -> None:
        self.r = client
        self.ttl_s = ttl_s  # of what an audit records: the job's own retention
        self._claim = connection.script(client, "claim_due")
        self._drop = connection.script(client, "drop_claim")

    # --- shard leases ---------------------------------------------------------------
    def hold(self, job_id: str, n: int, until: float) -> None:
        """Take (or extend) the lease on shard n of a job until `until`."""
        self.r.zadd(keys.leases(), {_member(job_id, n): until})

    def renew(self, shards: Iterable[tuple[str, int]], until: float) -> None:
        """Extend leases still held (XX: a lease released meanwhile is not taken again)."""
        mapping = {_member(job_id, n): until for job_id, n in shards}
        if mapping:
            self.r.zadd(keys.leases(), mapping, xx=True)

    def release(self, job_id: str, n: int) -> None:
        """The shard is done with (finished, failed for good, or skipped)."""
        self.r.zrem(keys.leases(), _member(job_id, n))

    def held(self) -> dict[tuple[str, int], float]:
        """Every lease and when it expires (for tests and operators)."""
        out = {}
        pairs = cast(
            list[tuple[bytes, float]], self.r.zrange(keys.leases(), 0, -1, withscores=True)
        )
        for raw, score in pairs:
            job_id, n = raw.decode().split(" ")
            out[(job_id, int(n))] = score
        return out

    def claim_expired(self, now: float, hold_for: float) -> list[tuple[str, int, float]]:
        """Claim shards whose lease expired by `now` until `now + hold_for`:
        `(job_id, shard, claim)` each, for `drop`."""
        until = now + hold_for
        members = self._claim(keys=[keys.leases()], args=[repr(now), repr(until), CLAIM_BATCH])
        out = []
        for raw in members:
            job_id, n = raw.decode().split(" ")
            out.append((job_id, int(n), until))
        return out

    def drop_lease(self, job_id: str, n: int, claim: float) -> None:
        """Forget a claimed lease once its shard is enqueued again (or needs nothing)."""
        self._drop(keys=[keys.leases()], args=[_member(job_id, n), repr(claim)])

    # --- jobs not yet enqueued --------------------------------------------------------
    def enqueued(self, job_id: str) -> None:
        """Every shard of the job is enqueued (or the job was removed)."""
        self.r.zrem(keys.unenqueued(), job_id)

    def claim_unenqueued(self, written_before: float, now: float) -> list[tuple[str, float]]:
        """Claim jobs written before `written_before` and still not enqueued: `(job_id,
        claim)` each, for `drop_unenqueued`; a claim comes due again after the same grace."""
        members = self._claim(
            keys=[keys.unenqueued()], args=[repr(written_before), repr(now), CLAIM_BATCH]
        )
        return [(raw.decode(), now) for raw in members]

    def drop_unenqueued(self, job_id: str, claim: float) -> None:
        self._drop(keys=[keys.unenqueued()], args=[job_id, repr(claim)])

    def is_unenqueued(self, job_id: str) -> bool:
        return self.r.zscore(keys.unenqueued(), job_id) is not None

    # --- audits of jobs not yet final -----------------------------------------------
    def claim_audits(self, due_before: float, now: float) -> list[str]:
        """Claim the jobs last audited (or created) before `due_before`; each comes due
        again as long after `now`."""
        members = self._claim(keys=[keys.active()], args=[repr(due_before), repr(now), CLAIM_BATCH])
        return [raw.decode() for raw in members]

    def watch(self, job_id: str, now: float) -> None:
        """Audit the job again from `now` on: its event was reopened (a redelivery)."""
        self.r.zadd(keys.active(), {job_id: now})

    def retire(self, job_id: str) -> None:
        """The job is gone, or final with its event settled (or no webhook): no more audits."""
        with self.r.pipeline(transaction=True) as p:
            p.zrem(keys.active(), job_id)
            p.delete(keys.missing(job_id))
            p.execute()

    def missing_again(self, job_id: str, missing: set[int], now: float) -> set[int]:
        """Record the shards an audit found nowhere, and return those the job's previous
        audit found missing too: lost, to be enqueued again. A shard found since is
        forgotten, and so is a lost one (its new message is there at the next audit)."""
        key = keys.missing(job_id)
        before = {int(n) for n in self.r.hkeys(key)}
        lost = missing & before
        with self.r.pipeline(transaction=True) as p:
            p.delete(key)
            if suspects := missing - lost:
                p.hset(key, mapping=dict.fromkeys(suspects, repr(now)))
                p.expire(key, self.ttl_s)
            p.execute()
        return lost
