"""bench/docq_jobs.py, how the bench tools upload files: as the API's `files` parts, with the
form's fields. (They follow jobs and read results through the client SDK, tested in
tests/client/test_sdk.py.)"""

from __future__ import annotations

from collections.abc import Callable

import httpx

from bench.docq_jobs import post_files


def client(handler: Callable[[httpx.Request], httpx.Response]) -> httpx.Client:
    return httpx.Client(base_url="http://docq", transport=httpx.MockTransport(handler))


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
