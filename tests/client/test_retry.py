"""The clients against a real HTTP server that answers 503 with Retry-After (as the API does
while Redis or the broker is away): each part of an upload waits and is sent again, like a
429, up to the same cap; a 503 without Retry-After is not waited out."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from client import errors
from client.aio import AsyncDocqClient
from client.documents import Limits
from client.protocol import RATE_LIMIT_WAITS
from client.sdk import DocqClient

UNAVAILABLE = {"error": {"code": "store_unavailable", "message": "Redis is unavailable"}}


class Answers:
    """What the server answers each POST /v1/jobs, in turn (the last one repeats), and the
    Idempotency-Key of each upload it received."""

    def __init__(self, *answers: tuple[int, str | None]) -> None:
        self.answers = list(answers)
        self.keys: list[str | None] = []


@pytest.fixture
def server() -> Iterator[tuple[str, Answers]]:
    answers = Answers()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            answers.keys.append(self.headers.get("idempotency-key"))
            code, retry_after = answers.answers[min(len(answers.keys), len(answers.answers)) - 1]
            job = {"id": f"job-{len(answers.keys)}", "status": "queued", "documents": 2}
            body = json.dumps(job if code == 202 else UNAVAILABLE).encode()
            self.send_response(code)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            if retry_after is not None:
                self.send_header("retry-after", retry_after)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", answers
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def docs(n: int) -> list[dict[str, str]]:
    return [{"id": str(i), "text": "t"} for i in range(n)]


LIMITS = Limits(max_documents=2)


def submit_sync(url: str, n: int) -> list[str]:
    with DocqClient(url, limits=LIMITS) as client:
        return client.submit_many(docs(n), idempotency_key="k").ids


def submit_async(url: str, n: int) -> list[str]:
    async def go() -> list[str]:
        async with AsyncDocqClient(url, limits=LIMITS) as client:
            return (await client.submit_many(docs(n), idempotency_key="k")).ids

    return asyncio.run(go())


Submit = Callable[[str, int], list[str]]
CLIENTS: list[Submit] = [submit_sync, submit_async]


@pytest.mark.parametrize("submit", CLIENTS)
def test_a_part_answered_503_with_retry_after_is_sent_again(
    server: tuple[str, Answers], submit: Submit
) -> None:
    url, answers = server
    answers.answers = [(503, "0"), (503, "0"), (202, None), (503, "0"), (202, None)]
    assert submit(url, 4) == ["job-3", "job-5"]
    # the same part, the same key: a 503 that came after the job was stored makes no second
    assert answers.keys == ["k", "k", "k", "k.1", "k.1"]


@pytest.mark.parametrize("submit", CLIENTS)
def test_a_part_that_stays_unavailable_raises_after_the_same_cap_as_429(
    server: tuple[str, Answers], submit: Submit
) -> None:
    url, answers = server
    answers.answers = [(503, "0")]
    with pytest.raises(errors.Unavailable) as raised:
        submit(url, 1)
    assert raised.value.retry_after == 0 and isinstance(raised.value, errors.ServerError)
    assert raised.value.code == "store_unavailable"
    assert len(answers.keys) == RATE_LIMIT_WAITS + 1


@pytest.mark.parametrize("submit", CLIENTS)
def test_a_503_without_retry_after_is_not_waited_out(
    server: tuple[str, Answers], submit: Submit
) -> None:
    url, answers = server
    answers.answers = [(503, None), (202, None)]
    with pytest.raises(errors.Unavailable):
        submit(url, 1)
    assert len(answers.keys) == 1
