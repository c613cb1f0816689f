"""Every Redis key docq writes, in one place.

All keys of a job share the `{job_id}` hash tag so that a Redis Cluster keeps them in one
slot (the Lua scripts in store.py touch several of them at once).
"""

from __future__ import annotations

PREFIX = "docq"


def job(job_id: str) -> str:
    """Hash: the job record (status, model, counts, timestamps)."""
    return f"{PREFIX}:job:{{{job_id}}}"


def shard(job_id: str, n: int) -> str:
    """String: shard n's documents, zlib-compressed JSON `[[id, text], ...]`."""
    return f"{PREFIX}:job:{{{job_id}}}:shard:{n}"


def results(job_id: str) -> str:
    """Hash: document index (upload order) -> result JSON. HSET makes re-runs overwrite."""
    return f"{PREFIX}:job:{{{job_id}}}:results"


def shards_done(job_id: str) -> str:
    """Hash: shard number -> failed-document count of its last completed run."""
    return f"{PREFIX}:job:{{{job_id}}}:shards"
