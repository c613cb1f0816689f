"""The chaos run's client: what a well-behaved client application does when docq's
processes die under it (the API refuses connections, answers 503): it tries again, and an
upload carries an Idempotency-Key, so that a retry never makes a second job."""

from __future__ import annotations

import time
from typing import Any

import httpx

# Answers that say "try again": the store or broker down, the API over its limits, the
# first upload with the same Idempotency-Key still being stored.
RETRY_STATUS = {409, 429, 502, 503, 504}


class PatientClient:
    """Calls the API until it answers for real or `give_up_s` passes; counts what it met."""

    def __init__(self, url: str, headers: dict[str, str], give_up_s: float = 600) -> None:
        self.http = httpx.Client(base_url=url, headers=headers, timeout=30)
        self.give_up_s = give_up_s
        self.refused = 0  # connection errors and timeouts (the API down)
        self.unavailable = 0  # 5xx / 429 answers (a dependency down)

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        deadline = time.monotonic() + self.give_up_s
        while True:
            try:
                response = self.http.request(method, path, **kwargs)
                if response.status_code not in RETRY_STATUS:
                    return response
                self.unavailable += 1
            except httpx.TransportError:
                self.refused += 1
            if time.monotonic() > deadline:
                raise TimeoutError(f"{method} {path}: no answer for {self.give_up_s:g} s")
            time.sleep(0.5)

    def upload(self, documents: list[dict[str, str]], webhook: dict[str, str], key: str) -> str:
        """The job's id (an upload retried after a lost answer finds the job it made)."""
        response = self.call(
            "POST",
            "/v1/jobs",
            json={"documents": documents, "webhook": webhook},
            headers={"Idempotency-Key": key},
        )
        assert response.status_code in (200, 202), response.text
        return str(response.json()["id"])

    def close(self) -> None:
        self.http.close()
