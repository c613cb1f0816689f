"""bench/docq_jobs.py, how every bench tool submits and waits: a job is polled until final
(or given up after its timeout), and files go up as the API's `files` parts."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from bench.docq_jobs import post_files, wait_job


def client(handler: Callable[[httpx.Request], httpx.Response]) -> httpx.Client:
    return httpx.Client(base_url="http://docq", transport=httpx.MockTransport(handler))


def test_a_job_is_polled_until_final_and_given_up_after_its_timeout() -> None:
    states = iter(["queued", "running", "succeeded"])
    moving = client(lambda _: httpx.Response(200, json={"id": "j", "status": next(states)}))
    assert wait_job(moving, "j", 0.0)["status"] == "succeeded"

    stuck = client(lambda _: httpx.Response(200, json={"id": "j", "status": "running"}))
    with pytest.raises(TimeoutError, match=r"not final after 0\.05 s"):
        wait_job(stuck, "j", 0.01, timeout_s=0.05)


def test_files_go_up_as_files_parts_with_the_form_fields() -> None:
    seen: list[httpx.Request] = []

    def accept(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(202, json={"id": "j"})

    resp, ms = post_files(client(accept), [("a.txt", b"hello", "text/plain")], {"model": "m"})
    body = seen[0].read()
    assert resp.status_code == 202 and ms >= 0 and seen[0].url.path == "/v1/jobs"
    assert b'name="files"; filename="a.txt"' in body and b"hello" in body
    assert b'name="model"' in body
