"""Idempotency-Keys on Redis: a key is claimed (SET NX) for an upload about to create its
job, bound to the job in the transaction that writes the job (then it expires with the
job), or released when the upload failed. A bound key therefore always has its job (until
both expire): an upload that finds the key unbound knows the first one is still storing.
Keys are stored as digests. Every Redis failure raises StoreUnavailable.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass

import redis
from redis.client import Pipeline

from docq import keys
from docq.store import connection

# How long an Idempotency-Key is held for an upload still being stored; once the job
# exists the key expires with it. A crashed upload frees its key after this long.
IDEMPOTENCY_LEASE_S = 300


def key_digest(tenant: str, idempotency_key: str) -> str:
    """Keys are scoped per tenant: two tenants choosing the same key never meet."""
    return hashlib.sha256(json.dumps([tenant, idempotency_key]).encode()).hexdigest()


def fingerprint(model: str, documents: Iterable[tuple[str, str]], webhook_url: str | None) -> str:
    """A digest of what makes two uploads the same request, whatever their body format:
    the model, the documents (ids and texts, in order) and the webhook URL."""
    h = hashlib.sha256()
    h.update(json.dumps([model, webhook_url]).encode())
    for doc_id, text in documents:
        h.update(json.dumps([doc_id, text], ensure_ascii=False).encode())
        h.update(b"\n")
    return h.hexdigest()


@dataclass(frozen=True, slots=True)
class IdempotencyClaim:
    """What an Idempotency-Key holds: the job it created and the request's fingerprint."""

    job_id: str
    fingerprint: str
    bound: bool  # False while the first request is still storing its job

    def encode(self) -> str:
        return json.dumps({"job": self.job_id, "fp": self.fingerprint, "bound": self.bound})

    @classmethod
    def decode(cls, raw: str | bytes) -> IdempotencyClaim:
        d = json.loads(raw)
        return cls(d["job"], d["fp"], bool(d["bound"]))


class IdempotencyKeys:
    """Claims of Idempotency-Keys; shares the job store's client."""

    def __init__(self, client: redis.Redis) -> None:
        self.r = client
        self._bind = connection.script(client, "bind_idempotency_key")
        self._release = connection.script(client, "release_idempotency_key")

    def claim(self, digest: str, claim: IdempotencyClaim) -> IdempotencyClaim | None:
        """Claim an Idempotency-Key for a job about to be created (SET NX, so two racing
        uploads cannot both win); returns the earlier claim instead when there is one."""
        key = keys.idempotency(digest)
        while True:
            if self.r.set(key, claim.encode(), nx=True, ex=IDEMPOTENCY_LEASE_S):
                return None
            raw = self.r.get(key)
            if raw is not None:  # else it expired between SET and GET: claim again
                return IdempotencyClaim.decode(raw)

    def bind(self, digest: str, claim: IdempotencyClaim, ttl_s: int = 0) -> bool:
        """From now on the key expires with its job; with `ttl_s`, it may be bound before
        the job is written (and then expires after `ttl_s`, the job's retention), so that
        an API process dying after writing the job leaves a key that answers with it."""
        key, job = keys.idempotency(digest), keys.job(claim.job_id)
        return bool(self._bind(keys=[key, job], args=[claim.encode(), ttl_s * 1000]))

    def bind_in(self, pipe: Pipeline, digest: str, claim: IdempotencyClaim, ttl_s: int) -> None:
        """Queue `bind` in `pipe`, the transaction that writes the job, so that the key is
        bound exactly when the job exists; its reply (1, or 0: the claim was lost) comes
        with the transaction's."""
        key, job = keys.idempotency(digest), keys.job(claim.job_id)
        self._bind(keys=[key, job], args=[claim.encode(), ttl_s * 1000], client=pipe)

    def confirm(self, digest: str, claim: IdempotencyClaim, replicas: int, timeout_ms: int) -> None:
        """Before a replay answers with `claim`'s job: the key written again as it is (a
        write of this connection's, for WAIT to confirm) and `replicas` replicas waited for;
        NotReplicated (a 503) when they do not confirm it. Replication keeps order, so a
        replica that has this write has the job too. Without it, a master cut off from its
        replicas (a partition's old master, back for the seconds before the Sentinels make
        it a replica) answered a retry 200 with a job that only it had, and lost it with
        its data: the fleet's master-partition scenario, 2026-12-05 (docs/fleet.md)."""
        if replicas <= 0:
            return
        pipe = self.r.pipeline()
        pipe.set(keys.idempotency(digest), claim.encode(), xx=True, keepttl=True)
        connection.replicated(pipe, replicas, timeout_ms).execute()

    def release(self, digest: str, claim: IdempotencyClaim) -> None:
        """Free a key whose upload failed (bound or not), unless someone else holds it or
        its job is still there (then a retry is answered with that job)."""
        key, job = keys.idempotency(digest), keys.job(claim.job_id)
        self._release(keys=[key, job], args=[claim.encode()])
