"""The Python client of the docq v1 API, over httpx: `DocqClient` (sync; the asyncio one,
`AsyncDocqClient`, is client/aio.py).

    client = DocqClient("http://127.0.0.1:8080", api_key="...")
    submission = client.submit_many(from_paths(paths), model="doc-type")  # 1+ jobs
    client.wait_all(submission.ids, on_progress=print)
    for result in client.results_all(submission.ids):  # lazily, page by page
        ...

Both clients build the same requests and read the same answers (the module functions
below); they differ only in how they send and how they sleep. Errors are client/errors.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import standardwebhooks

from client.documents import Document, Limits, bodies, ndjson_line
from client.errors import APIError as DocqAPIError  # the first client's name for it
from client.errors import InvalidSignature, RateLimited, Unreachable, WaitTimeout, api_error
from docq.jobs import JobStatus

__all__ = [
    "DocqAPIError",
    "DocqClient",
    "Progress",
    "Submission",
    "progress_of",
    "verify_webhook",
]

DEFAULT_URL = "http://127.0.0.1:8080"
NDJSON = "application/x-ndjson"
RESULTS_PAGE = 500  # results per request: the server caps it at DOCQ_RESULTS_PAGE_MAX
# A split upload can pass the tenant's limit on active jobs: each part waits the server's
# Retry-After this many times (its Idempotency-Key, if any, makes the retry safe).
RATE_LIMIT_WAITS = 20
DEFAULT_RETRY_AFTER_S = 5.0


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

    jobs: list[dict[str, Any]] = field(default_factory=list)

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


def progress_of(jobs: Iterable[Mapping[str, Any]]) -> Progress:
    """Sum job status objects (`GET /v1/jobs/{id}` answers) into one Progress."""
    jobs = list(jobs)
    return Progress(
        documents=sum(int(j["documents"]) for j in jobs),
        done=sum(int(j["progress"]["documents_done"]) for j in jobs),
        failed=sum(int(j["progress"]["documents_failed"]) for j in jobs),
        jobs=len(jobs),
        jobs_final=sum(JobStatus(j["status"]).final for j in jobs),
    )


def verify_webhook(body: bytes | str, headers: Mapping[str, str], secret: str) -> dict[str, Any]:
    """The event of a webhook delivery (`{"type", "data"}`) once its Standard Webhooks
    signature and timestamp verify with the job's `whsec_` secret; else InvalidSignature."""
    try:
        event = standardwebhooks.Webhook(secret).verify(body, dict(headers))
    except (standardwebhooks.WebhookVerificationError, RuntimeError, ValueError) as exc:
        # RuntimeError and ValueError (binascii.Error): a secret that is not whsec_ base64.
        raise InvalidSignature(str(exc) or "invalid webhook signature") from None
    if not isinstance(event, dict):
        raise InvalidSignature("the webhook body is not a JSON object")
    return event


def _answer(resp: httpx.Response) -> Any:
    """The decoded JSON body of a success, or the APIError the error body names."""
    if resp.status_code >= 400:
        try:
            payload = resp.json()
        except ValueError:
            payload = None
        raise api_error(resp.status_code, payload, resp.text, resp.headers.get("retry-after"))
    return resp.json()


def _unreachable(url: str, exc: httpx.TransportError) -> Unreachable:
    return Unreachable(f"cannot reach {url}: {exc or type(exc).__name__}")


def _headers(api_key: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {api_key}"} if api_key else {}


def _job_request(
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


def _part_key(key: str | None, part: int) -> str | None:
    """Each job of a split upload gets its own Idempotency-Key, derived from the caller's."""
    return None if key is None else (key if part == 0 else f"{key}.{part}")


def _next_cursor(page: Mapping[str, Any], cursor: str) -> str | None:
    """Where the next page starts; None when this page was the last of a final job, or when a
    running job has nothing newer yet (the cursor did not move)."""
    nxt = page["next_cursor"]
    return None if nxt is None or nxt == cursor else str(nxt)


class DocqClient:
    """Upload documents, follow jobs, read results: the synchronous client."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        limits: Limits | None = None,
        transport: httpx.BaseTransport | None = None,
        http: httpx.Client | None = None,
    ) -> None:
        # `transport` is the test edge (httpx.MockTransport); `http` a ready client
        # (e.g. FastAPI's TestClient, which speaks to the app in process).
        self.url = url
        self.limits = limits or Limits()
        self._owns_http = http is None  # a client passed in is its owner's to close
        self.http = http or httpx.Client(base_url=url, timeout=timeout, transport=transport)
        self._auth = _headers(api_key)

    def __enter__(self) -> DocqClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if self._owns_http:
            self.http.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        headers = {**self._auth, **kwargs.pop("headers", {})}
        try:
            resp = self.http.request(method, path, headers=headers, **kwargs)
        except httpx.TransportError as exc:
            raise _unreachable(self.url, exc) from exc
        return _answer(resp)

    def submit(
        self,
        documents: Iterable[Document],
        model: str | None = None,
        *,
        webhook_url: str | None = None,
        webhook_secret: str | None = None,
        idempotency_key: str | None = None,
        on_invalid: str | None = None,
    ) -> dict[str, Any]:
        """Upload documents as one job; returns its 202 answer (`id`, `status`, ...)."""
        body = b"".join(ndjson_line(d) for d in documents)
        request = _job_request(
            body, model, webhook_url, webhook_secret, idempotency_key, on_invalid
        )
        return self._call("POST", "/v1/jobs", **request)  # type: ignore[no-any-return]

    def submit_many(
        self,
        documents: Iterable[Document],
        model: str | None = None,
        *,
        webhook_url: str | None = None,
        webhook_secret: str | None = None,
        idempotency_key: str | None = None,
        on_invalid: str | None = None,
        into: Submission | None = None,
    ) -> Submission:
        """Upload any number of documents as as many jobs as the limits need, in order.

        Documents are read lazily, one job's worth at a time; a part answered 429 waits the
        server's Retry-After and is sent again (RATE_LIMIT_WAITS times). Each job is added to `into`
        (a fresh Submission when None) as soon as it is created, so a caller that passes
        its own still knows the jobs created before a part was refused.
        """
        submission = Submission() if into is None else into
        for part, (body, _) in enumerate(bodies(documents, self.limits)):
            key = _part_key(idempotency_key, part)
            request = _job_request(body, model, webhook_url, webhook_secret, key, on_invalid)
            for waits in range(RATE_LIMIT_WAITS + 1):
                try:
                    submission.jobs.append(self._call("POST", "/v1/jobs", **request))
                    break
                except RateLimited as exc:
                    if waits == RATE_LIMIT_WAITS:
                        raise
                    time.sleep(
                        DEFAULT_RETRY_AFTER_S if exc.retry_after is None else exc.retry_after
                    )
        return submission

    def job(self, job_id: str) -> dict[str, Any]:
        """A job's status object."""
        return self._call("GET", f"/v1/jobs/{job_id}")  # type: ignore[no-any-return]

    def wait(
        self,
        job_id: str,
        *,
        poll_s: float = 0.5,
        timeout_s: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        """Poll until the job is final; returns its final status."""
        return self.wait_all([job_id], poll_s=poll_s, timeout_s=timeout_s, on_progress=on_progress)[
            0
        ]

    def wait_all(
        self,
        job_ids: Sequence[str],
        *,
        poll_s: float = 0.5,
        timeout_s: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> list[dict[str, Any]]:
        """Poll until every job is final, calling `on_progress` after each round."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        latest: dict[str, dict[str, Any]] = {}
        while True:
            for job_id in job_ids:
                if job_id not in latest or not JobStatus(latest[job_id]["status"]).final:
                    latest[job_id] = self.job(job_id)
            progress = progress_of(latest.values())
            if on_progress is not None:
                on_progress(progress)
            if progress.finished:
                return [latest[job_id] for job_id in job_ids]
            if deadline is not None and time.monotonic() > deadline:
                raise WaitTimeout(f"{len(job_ids) - progress.jobs_final} job(s) still running")
            time.sleep(poll_s)

    def results(self, job_id: str, page: int = RESULTS_PAGE) -> Iterator[dict[str, Any]]:
        """The job's results in upload order, fetched a page at a time as they are consumed.

        On a running job it ends at the first document not done yet.
        """
        cursor = "0"
        while True:
            data = self._call(
                "GET", f"/v1/jobs/{job_id}/results", params={"limit": page, "cursor": cursor}
            )
            yield from data["data"]
            nxt = _next_cursor(data, cursor)
            if nxt is None:
                return
            cursor = nxt

    def results_all(
        self, job_ids: Iterable[str], page: int = RESULTS_PAGE
    ) -> Iterator[dict[str, Any]]:
        """The results of several jobs (a Submission's ids), one job after the other."""
        for job_id in job_ids:
            yield from self.results(job_id, page)

    def cancel(self, job_id: str) -> dict[str, Any]:
        """Cancel a job; returns its status (now `cancelled`, unless it was already final)."""
        return self._call("DELETE", f"/v1/jobs/{job_id}")  # type: ignore[no-any-return]

    def models(self) -> list[dict[str, Any]]:
        """The models of the server's Triton repository, with state, labels and limits."""
        return self._call("GET", "/v1/models")["data"]  # type: ignore[no-any-return]
