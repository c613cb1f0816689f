"""How the client speaks the v1 API, whatever sends the requests: the requests built, the
answers read, and which refusals are waited out and sent again. DocqClient (sdk.py) and
AsyncDocqClient (aio.py) share all of it; they differ only in how they send and sleep.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from client.errors import APIError, RateLimited, Unavailable, Unreachable, api_error
from client.models import JobCreated, JobPublic, JobStatus

DEFAULT_URL = "http://127.0.0.1:8080"
NDJSON = "application/x-ndjson"
RESULTS_PAGE = 500  # results per request: the server caps it at DOCQ_RESULTS_PAGE_MAX
# A split upload can pass the tenant's limit on active jobs (429), or meet the server while
# Redis or the broker is away (503): each part waits the server's Retry-After this many times
# (its Idempotency-Key, if any, makes the retry safe).
RATE_LIMIT_WAITS = 20
DEFAULT_RETRY_AFTER_S = 5.0  # a 429 without Retry-After


@dataclass(frozen=True)
class Progress:
    """Where a set of jobs stands, summed over them: what `on_progress` receives each poll."""

    documents: int
    done: int  # documents with a result, classified or failed
    failed: int  # of those, the ones with an error instead of a label
    jobs: int
    jobs_final: int

    @property
    def finished(self) -> bool:
        return self.jobs_final == self.jobs


@dataclass
class Submission:
    """The jobs one upload became, in upload order (their 202 answers)."""

    jobs: list[JobCreated] = field(default_factory=list)

    @property
    def ids(self) -> list[str]:
        return [job["id"] for job in self.jobs]

    @property
    def documents(self) -> int:
        return sum(int(job["documents"]) for job in self.jobs)

    @property
    def failed(self) -> list[dict[str, Any]]:
        """The documents accepted as failed (bad files), each with its `job`: `{job,
        document, id, error_code, message}`; their results carry the same error_code."""
        return [{"job": j["id"], **f} for j in self.jobs for f in j.get("failed", [])]


ProgressCallback = Callable[[Progress], None]


def progress_of(jobs: Iterable[JobPublic]) -> Progress:
    """Sum job status objects (`GET /v1/jobs/{id}` answers) into one Progress."""
    jobs = list(jobs)
    return Progress(
        documents=sum(int(j["documents"]) for j in jobs),
        done=sum(int(j["progress"]["documents_done"]) for j in jobs),
        failed=sum(int(j["progress"]["documents_failed"]) for j in jobs),
        jobs=len(jobs),
        jobs_final=sum(JobStatus(j["status"]).final for j in jobs),
    )


def answer(resp: httpx.Response) -> Any:
    """The decoded JSON body of a success, or the APIError the error body names."""
    if resp.status_code >= 400:
        try:
            payload = resp.json()
        except ValueError:
            payload = None
        raise api_error(resp.status_code, payload, resp.text, resp.headers.get("retry-after"))
    return resp.json()


def retry_delay(exc: APIError) -> float | None:
    """Seconds to wait before sending a refused request again, or None when waiting will not
    help: a 429 waits its Retry-After (DEFAULT_RETRY_AFTER_S without one); a 503 waits its
    Retry-After, the server's word that it will be back (a 503 without one is not waited)."""
    if isinstance(exc, RateLimited):
        return DEFAULT_RETRY_AFTER_S if exc.retry_after is None else exc.retry_after
    if isinstance(exc, Unavailable):
        return exc.retry_after
    return None


def unreachable(url: str, exc: httpx.TransportError) -> Unreachable:
    return Unreachable(f"cannot reach {url}: {exc or type(exc).__name__}")


def auth_headers(api_key: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {api_key}"} if api_key else {}


def job_request(
    body: bytes,
    model: str | None,
    webhook_url: str | None,
    webhook_secret: str | None,
    idempotency_key: str | None,
    on_invalid: str | None = None,
) -> dict[str, Any]:
    """The keyword arguments of one NDJSON upload request (`on_invalid`: "reject" refuses
    the whole upload when a document is bad, listing them all; "accept", the server's
    default, makes each a failed document)."""
    params = {
        k: v
        for k, v in (
            ("model", model),
            ("webhook_url", webhook_url),
            ("webhook_secret", webhook_secret),
            ("on_invalid", on_invalid),
        )
        if v
    }
    headers = {"content-type": NDJSON}
    if idempotency_key:
        headers["idempotency-key"] = idempotency_key
    return {"content": body, "params": params, "headers": headers}


def part_key(key: str | None, part: int) -> str | None:
    """Each job of a split upload gets its own Idempotency-Key, derived from the caller's."""
    return None if key is None else (key if part == 0 else f"{key}.{part}")


def next_cursor(page: Mapping[str, Any], cursor: str) -> str | None:
    """Where the next page starts; None when this page was the last of a final job, or when a
    running job has nothing newer yet (the cursor did not move)."""
    nxt = page["next_cursor"]
    return None if nxt is None or nxt == cursor else str(nxt)
