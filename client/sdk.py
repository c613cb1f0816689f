"""The Python client of the docq v1 API, over httpx: `DocqClient` (sync; the asyncio one,
`AsyncDocqClient`, is client/aio.py).

    client = DocqClient("http://127.0.0.1:8080", api_key="...")
    submission = client.submit_many(from_paths(paths), model="doc-type")  # 1+ jobs
    client.wait_all(submission.ids, on_progress=print)
    for result in client.results_all(submission.ids):  # lazily, page by page
        ...

Both clients build the same requests and read the same answers (client/protocol.py); they
differ only in how they send and how they sleep. Errors are client/errors.py, the answers'
types client/models.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import httpx

from client.documents import Document, Limits, bodies, ndjson_line
from client.errors import APIError, WaitTimeout
from client.errors import APIError as DocqAPIError  # the first client's name for it
from client.models import JobCreated, JobPublic, JobStatus, ModelPublic
from client.protocol import (
    DEFAULT_RETRY_AFTER_S,
    DEFAULT_URL,
    RATE_LIMIT_WAITS,
    RESULTS_PAGE,
    Progress,
    ProgressCallback,
    Submission,
    answer,
    auth_headers,
    job_request,
    next_cursor,
    part_key,
    progress_of,
    retry_delay,
    unreachable,
)
from client.webhooks import verify_webhook

__all__ = [
    "DEFAULT_RETRY_AFTER_S",
    "DEFAULT_URL",
    "RATE_LIMIT_WAITS",
    "DocqAPIError",
    "DocqClient",
    "Progress",
    "Submission",
    "progress_of",
    "verify_webhook",
]


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
        self._auth = auth_headers(api_key)

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
            raise unreachable(self.url, exc) from exc
        return answer(resp)

    def submit(
        self,
        documents: Iterable[Document],
        model: str | None = None,
        *,
        webhook_url: str | None = None,
        webhook_secret: str | None = None,
        idempotency_key: str | None = None,
        on_invalid: str | None = None,
    ) -> JobCreated:
        """Upload documents as one job; returns its 202 answer (`id`, `status`, ...)."""
        body = b"".join(ndjson_line(d) for d in documents)
        request = job_request(body, model, webhook_url, webhook_secret, idempotency_key, on_invalid)
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

        Documents are read lazily, one job's worth at a time; a part answered 429, or 503 with
        Retry-After, waits the server's Retry-After and is sent again (RATE_LIMIT_WAITS times:
        pass an idempotency_key so that a 503 that came after the job was stored never makes
        a second one). Each job is added to `into`
        (a fresh Submission when None) as soon as it is created, so a caller that passes
        its own still knows the jobs created before a part was refused.
        """
        submission = Submission() if into is None else into
        for part, (body, _) in enumerate(bodies(documents, self.limits)):
            key = part_key(idempotency_key, part)
            request = job_request(body, model, webhook_url, webhook_secret, key, on_invalid)
            for waits in range(RATE_LIMIT_WAITS + 1):
                try:
                    submission.jobs.append(self._call("POST", "/v1/jobs", **request))
                    break
                except APIError as exc:
                    delay = retry_delay(exc)
                    if delay is None or waits == RATE_LIMIT_WAITS:
                        raise
                    time.sleep(delay)
        return submission

    def job(self, job_id: str) -> JobPublic:
        """A job's status object."""
        return self._call("GET", f"/v1/jobs/{job_id}")  # type: ignore[no-any-return]

    def wait(
        self,
        job_id: str,
        *,
        poll_s: float = 0.5,
        timeout_s: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> JobPublic:
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
    ) -> list[JobPublic]:
        """Poll until every job is final, calling `on_progress` after each round."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        latest: dict[str, JobPublic] = {}
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
            nxt = next_cursor(data, cursor)
            if nxt is None:
                return
            cursor = nxt

    def results_all(
        self, job_ids: Iterable[str], page: int = RESULTS_PAGE
    ) -> Iterator[dict[str, Any]]:
        """The results of several jobs (a Submission's ids), one job after the other."""
        for job_id in job_ids:
            yield from self.results(job_id, page)

    def cancel(self, job_id: str) -> JobPublic:
        """Cancel a job; returns its status (now `cancelled`, unless it was already final)."""
        return self._call("DELETE", f"/v1/jobs/{job_id}")  # type: ignore[no-any-return]

    def models(self) -> list[ModelPublic]:
        """The models of the server's Triton repository, with state, labels and limits."""
        return self._call("GET", "/v1/models")["data"]  # type: ignore[no-any-return]
