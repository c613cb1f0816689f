"""A small Python client for the docq v1 API."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from typing import Any

import httpx

from docq.jobs import JobStatus


class DocqAPIError(Exception):
    """The API answered with an error body."""

    def __init__(self, status: int, error: dict[str, Any]) -> None:
        super().__init__(f"{status} {error.get('code')}: {error.get('message')}")
        self.status = status
        self.error = error


class DocqClient:
    """Upload documents, poll jobs, page through results."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8080",
        *,
        timeout: float = 60.0,
        http: httpx.Client | None = None,
    ) -> None:
        # `http` lets tests and embedders pass a ready client (e.g. FastAPI's TestClient).
        self.http = http or httpx.Client(base_url=base_url, timeout=timeout)

    def _check(self, resp: httpx.Response) -> Any:
        if resp.status_code >= 400:
            try:
                error = resp.json()["error"]
            except (ValueError, KeyError):
                error = {"code": "http_error", "message": resp.text}
            raise DocqAPIError(resp.status_code, error)
        return resp.json()

    def submit(
        self, documents: Iterable[dict[str, str]], model: str | None = None
    ) -> dict[str, Any]:
        """Upload documents (`{"id", "text"}` each) as NDJSON; returns the 202 answer."""
        body = b"".join(json.dumps(d, ensure_ascii=False).encode() + b"\n" for d in documents)
        params = {"model": model} if model else {}
        resp = self.http.post(
            "/v1/jobs",
            content=body,
            params=params,
            headers={"content-type": "application/x-ndjson"},
        )
        return self._check(resp)  # type: ignore[no-any-return]

    def job(self, job_id: str) -> dict[str, Any]:
        return self._check(self.http.get(f"/v1/jobs/{job_id}"))  # type: ignore[no-any-return]

    def wait(
        self, job_id: str, *, poll_s: float = 0.5, timeout_s: float | None = None
    ) -> dict[str, Any]:
        """Poll until the job is final."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            job = self.job(job_id)
            if JobStatus(job["status"]).final:
                return job
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} still {job['status']}")
            time.sleep(poll_s)

    def results(self, job_id: str, page: int = 500) -> Iterator[dict[str, Any]]:
        """Every available result, in upload order."""
        cursor: str | None = "0"
        while cursor is not None:
            data = self._check(
                self.http.get(
                    f"/v1/jobs/{job_id}/results", params={"limit": page, "cursor": cursor}
                )
            )
            yield from data["data"]
            if data["next_cursor"] == cursor:
                return
            cursor = data["next_cursor"]

    def cancel(self, job_id: str) -> dict[str, Any]:
        return self._check(self.http.delete(f"/v1/jobs/{job_id}"))  # type: ignore[no-any-return]

    def models(self) -> list[dict[str, Any]]:
        return self._check(self.http.get("/v1/models"))["data"]  # type: ignore[no-any-return]

    def close(self) -> None:
        self.http.close()
