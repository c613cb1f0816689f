"""Following a job through the API as a client does: until it is final, and every result."""

from __future__ import annotations

import time
from typing import Any

import httpx
from fastapi.testclient import TestClient

from docq.jobs import JobStatus


def wait_until_final(
    api: TestClient, job_id: str, timeout: float = 300
) -> tuple[dict[str, Any], set[str]]:
    seen: set[str] = set()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = api.get(f"/v1/jobs/{job_id}").json()
        seen.add(job["status"])
        if JobStatus(job["status"]).final:
            return job, seen
        time.sleep(0.1)
    raise TimeoutError(f"job {job_id} not final after {timeout}s: {job}")


def all_results(api: TestClient, job_id: str, limit: int = 7) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": limit}
        if cursor is not None:
            params["cursor"] = cursor
        page = api.get(f"/v1/jobs/{job_id}/results", params=params).json()
        out += page["data"]
        cursor = page["next_cursor"]
        if cursor is None:
            return out


def assert_unavailable(response: httpx.Response) -> None:
    """A 503 with docq's JSON error body (httpx raised if it did not come within its timeout)."""
    assert response.status_code == 503, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert "error" in body or body.get("status") == "unavailable", body
