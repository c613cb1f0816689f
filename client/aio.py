"""The asyncio form of the docq client: `AsyncDocqClient`, every method a coroutine.

    async with AsyncDocqClient("http://127.0.0.1:8080", api_key="...") as client:
        submission = await client.submit_many(from_paths(paths), model="doc-type")
        await client.wait_all(submission.ids)
        async for result in client.results_all(submission.ids):
            ...

It builds its requests and reads its answers with client/protocol.py, as the sync client
does; only sending and sleeping differ.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any

import httpx

from client.documents import Document, Limits, bodies, ndjson_line
from client.errors import APIError, WaitTimeout
from client.models import JobCreated, JobPublic, JobStatus, ModelPublic
from client.protocol import (
    DEFAULT_URL,
    RATE_LIMIT_WAITS,
    RESULTS_PAGE,
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

__all__ = ["AsyncDocqClient"]


class AsyncDocqClient:
    """The same client for asyncio code: every method is a coroutine, results an async
    iterator."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        limits: Limits | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.url = url
        self.limits = limits or Limits()
        self._owns_http = http is None
        self.http = http or httpx.AsyncClient(base_url=url, timeout=timeout, transport=transport)
        self._auth = auth_headers(api_key)

    async def __aenter__(self) -> AsyncDocqClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owns_http:
            await self.http.aclose()

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        headers = {**self._auth, **kwargs.pop("headers", {})}
        try:
            resp = await self.http.request(method, path, headers=headers, **kwargs)
        except httpx.TransportError as exc:
            raise unreachable(self.url, exc) from exc
        return answer(resp)

    async def submit(
        self,
        documents: Iterable[Document],
        model: str | None = None,
        *,
        webhook_url: str | None = None,
        webhook_secret: str | None = None,
        idempotency_key: str | None = None,
        on_invalid: str | None = None,
    ) -> JobCreated:
        """Upload documents as one job; returns its 202 answer."""
        body = b"".join(ndjson_line(d) for d in documents)
        request = job_request(body, model, webhook_url, webhook_secret, idempotency_key, on_invalid)
        return await self._call("POST", "/v1/jobs", **request)  # type: ignore[no-any-return]

    async def submit_many(
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
        """Upload any number of documents as as many jobs as the limits need, in order."""
        submission = Submission() if into is None else into
        for part, (body, _) in enumerate(bodies(documents, self.limits)):
            key = part_key(idempotency_key, part)
            request = job_request(body, model, webhook_url, webhook_secret, key, on_invalid)
            for waits in range(RATE_LIMIT_WAITS + 1):
                try:
                    submission.jobs.append(await self._call("POST", "/v1/jobs", **request))
                    break
                except APIError as exc:
                    delay = retry_delay(exc)
                    if delay is None or waits == RATE_LIMIT_WAITS:
                        raise
                    await asyncio.sleep(delay)
        return submission

    async def job(self, job_id: str) -> JobPublic:
        """A job's status object."""
        return await self._call("GET", f"/v1/jobs/{job_id}")  # type: ignore[no-any-return]

    async def wait(
        self,
        job_id: str,
        *,
        poll_s: float = 0.5,
        timeout_s: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> JobPublic:
        """Poll until the job is final; returns its final status."""
        done = await self.wait_all(
            [job_id], poll_s=poll_s, timeout_s=timeout_s, on_progress=on_progress
        )
        return done[0]

    async def wait_all(
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
                    latest[job_id] = await self.job(job_id)
            progress = progress_of(latest.values())
            if on_progress is not None:
                on_progress(progress)
            if progress.finished:
                return [latest[job_id] for job_id in job_ids]
            if deadline is not None and time.monotonic() > deadline:
                raise WaitTimeout(f"{len(job_ids) - progress.jobs_final} job(s) still running")
            await asyncio.sleep(poll_s)

    async def results(self, job_id: str, page: int = RESULTS_PAGE) -> AsyncIterator[dict[str, Any]]:
        """The job's results in upload order, fetched a page at a time as they are consumed."""
        cursor = "0"
        while True:
            data = await self._call(
                "GET", f"/v1/jobs/{job_id}/results", params={"limit": page, "cursor": cursor}
            )
            for result in data["data"]:
                yield result
            nxt = next_cursor(data, cursor)
            if nxt is None:
                return
            cursor = nxt

    async def results_all(
        self, job_ids: Iterable[str], page: int = RESULTS_PAGE
    ) -> AsyncIterator[dict[str, Any]]:
        """The results of several jobs (a Submission's ids), one job after the other."""
        for job_id in job_ids:
            async for result in self.results(job_id, page):
                yield result

    async def cancel(self, job_id: str) -> JobPublic:
        """Cancel a job; returns its status."""
        return await self._call("DELETE", f"/v1/jobs/{job_id}")  # type: ignore[no-any-return]

    async def models(self) -> list[ModelPublic]:
        """The models of the server's Triton repository."""
        return (await self._call("GET", "/v1/models"))["data"]  # type: ignore[no-any-return]
