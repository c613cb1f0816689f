"""Tenants on Redis: their API keys (stored as keyed hashes, never as keys) and the work
each has in flight, which the per-tenant limits are checked against.

A key reads `dq_<key id>_<secret>`: the id (public, shown by `docq keys list`, used to
revoke) finds the stored record in one lookup; the secret (256 random bits) is what proves
the caller. Only HMAC-SHA256(api_key_secret, key) is stored, and it is compared with
`hmac.compare_digest`, so neither a copy of Redis nor the timing of a refusal reveals a key.
Every Redis failure raises StoreUnavailable (connection.py).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import redis

from docq import keys
from docq.jobs import JobStatus
from docq.store.codec import decode, decode_values

KEY_PREFIX = "dq_"
# A job's fields its tenant's load reads (the last three: a manifest job's, else None).
LOAD_FIELDS = [
    "status",
    "documents",
    "documents_done",
    "unread_bound",
    "max_documents",
    "documents_read",
]


@dataclass(frozen=True, slots=True)
class ApiKey:
    """An API key as stored: who it belongs to, never the key."""

    id: str
    tenant: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class TenantLoad:
    """A tenant's work not final yet: its queued or running jobs and their unfinished
    documents (of a manifest job, also the most its unread parts can still hold)."""

    jobs: int
    documents: int


def key_hash(secret: str, key: str) -> str:
    """The HMAC-SHA256 of an API key under the server secret: what the store keeps."""
    return hmac.new(secret.encode(), key.encode(), hashlib.sha256).hexdigest()


def _key_id(key: str) -> str | None:
    if not key.startswith(KEY_PREFIX):
        return None
    key_id, sep, rest = key[len(KEY_PREFIX) :].partition("_")
    return key_id if sep and key_id.isalnum() and rest else None


def _strings(members: Any) -> list[str]:
    """A set's members (bytes, as the store's client answers) as sorted strings."""
    return sorted(m.decode() for m in members)


class Tenants:
    """API keys and per-tenant load; shares the job store's client."""

    def __init__(self, client: redis.Redis, *, secret: str = "") -> None:
        self.r = client
        self.secret = secret

    # --- keys -----------------------------------------------------------------------
    def create_key(self, tenant: str) -> tuple[ApiKey, str]:
        """A new key for `tenant`: its record, and the key itself (shown once, never
        stored)."""
        if not tenant or not tenant.isprintable() or len(tenant) > 64:
            raise ValueError("a tenant is 1-64 printable characters")
        key_id = secrets.token_hex(6)
        key = f"{KEY_PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
        now = time.time()
        with self.r.pipeline(transaction=True) as p:
            p.hset(
                keys.api_key(key_id),
                mapping={
                    "tenant": tenant,
                    "hash": key_hash(self.secret, key),
                    "created_at": repr(now),
                },
            )
            p.sadd(keys.api_keys(), key_id)
            p.execute()
        return ApiKey(key_id, tenant, datetime.fromtimestamp(now, UTC)), key

    def list_keys(self) -> list[ApiKey]:
        """Every key's record, oldest first."""
        found = []
        for key_id in _strings(self.r.smembers(keys.api_keys())):
            h = decode(self.r.hgetall(keys.api_key(key_id)))
            if h:
                created = datetime.fromtimestamp(float(h["created_at"]), UTC)
                found.append(ApiKey(key_id, h["tenant"], created))
        return sorted(found, key=lambda k: k.created_at)

    def revoke_key(self, key_id: str) -> bool:
        """Delete a key: the next request with it gets 401. False when there was none."""
        with self.r.pipeline(transaction=True) as p:
            p.delete(keys.api_key(key_id))
            p.srem(keys.api_keys(), key_id)
            deleted, _ = p.execute()
        return bool(deleted)

    def authenticate(self, key: str) -> str | None:
        """The tenant `key` belongs to, or None for an unknown, revoked or malformed key."""
        key_id = _key_id(key)
        if key_id is None:
            return None
        stored = self.r.hmget(keys.api_key(key_id), ["tenant", "hash"])
        tenant, digest = decode_values(stored)
        # Compared even when the id is unknown, so both refusals take the same time.
        expected = key_hash(self.secret, key)
        if not hmac.compare_digest(expected, digest or "0" * len(expected)) or tenant is None:
            return None
        return tenant

    # --- load -----------------------------------------------------------------------
    def load(self, tenant: str) -> TenantLoad:
        """The tenant's queued or running jobs and their unfinished documents; jobs found
        final or expired leave the tenant's set. A manifest job's count is not known until
        its parts are read, so it counts the most they can hold (`unread_bound`, within its
        cap, store/manifests.py): a tenant never has more queued than its limit says."""
        set_key = keys.tenant_jobs(tenant)
        job_ids = _strings(self.r.smembers(set_key))
        if not job_ids:
            return TenantLoad(0, 0)
        with self.r.pipeline(transaction=False) as p:
            for job_id in job_ids:
                p.hmget(keys.job(job_id), LOAD_FIELDS)
            rows = p.execute()
        jobs = documents = 0
        gone = []
        for job_id, (status, total, done, unread, cap, read) in zip(job_ids, rows, strict=True):
            if status is None or JobStatus(status.decode()).final:
                gone.append(job_id)
                continue
            jobs += 1
            documents += int(total) - int(done or 0)
            if unread is not None:  # a manifest job: what its unread parts may hold
                room = int(cap) - int(read) if cap and int(cap) > 0 else int(unread)
                documents += max(0, min(int(unread), room))
        if gone:
            self.r.srem(set_key, *gone)
        return TenantLoad(jobs, documents)
