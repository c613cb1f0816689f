"""client/sdk.py and client/documents.py against an httpx.MockTransport: the real client code,
a fake server at the edge."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import standardwebhooks

from client import errors
from client.aio import AsyncDocqClient
from client.documents import Limits, bodies, from_ndjson, from_paths, from_texts
from client.sdk import DocqClient, verify_webhook

Handler = Callable[[httpx.Request], httpx.Response]


def status(job_id: str, state: str, done: int, documents: int = 4, failed: int = 0) -> dict:
    return {
        "id": job_id,
        "status": state,
        "model": "doc-type",
        "documents": documents,
        "progress": {"documents_done": done, "documents_failed": failed},
    }


class FakeServer:
    """Records every request; answers uploads with a new job id each."""

    def __init__(self, routes: dict[tuple[str, str], Handler] | None = None) -> None:
        self.requests: list[httpx.Request] = []
        self.routes = routes or {}

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        handler = self.routes.get((request.method, request.url.path))
        if handler is not None:
            return handler(request)
        if (request.method, request.url.path) == ("POST", "/v1/jobs"):
            lines = request.content.decode().splitlines()
            job = {"id": f"job-{len(self.uploads) - 1}", "status": "queued"}
            return httpx.Response(202, json={**job, "model": "m", "documents": len(lines)})
        return httpx.Response(404, json={"error": {"code": "not_found", "message": "no route"}})

    @property
    def uploads(self) -> list[httpx.Request]:
        return [r for r in self.requests if r.method == "POST"]


def docs(n: int, size: int = 10) -> list[dict[str, str]]:
    return [{"id": f"d{i}", "text": "x" * size} for i in range(n)]


def test_the_api_key_travels_as_a_bearer_token_and_only_when_given() -> None:
    server = FakeServer({("GET", "/v1/jobs/j"): lambda r: httpx.Response(200, json={})})
    DocqClient(api_key="k-123", transport=httpx.MockTransport(server)).job("j")
    DocqClient(transport=httpx.MockTransport(server)).job("j")
    assert server.requests[0].headers["authorization"] == "Bearer k-123"
    assert "authorization" not in server.requests[1].headers


def test_submit_many_splits_by_document_count_in_upload_order() -> None:
    server = FakeServer()
    client = DocqClient(transport=httpx.MockTransport(server), limits=Limits(max_documents=4))
    submission = client.submit_many(docs(10), "doc-type", idempotency_key="up-1")
    assert submission.ids == ["job-0", "job-1", "job-2"]
    assert submission.documents == 10
    sent = [[json.loads(line)["id"] for line in r.content.splitlines()] for r in server.uploads]
    assert sent == [["d0", "d1", "d2", "d3"], ["d4", "d5", "d6", "d7"], ["d8", "d9"]]
    assert {r.headers["content-type"] for r in server.uploads} == {"application/x-ndjson"}
    assert {r.url.params["model"] for r in server.uploads} == {"doc-type"}
    # A retried split upload replays each part: one key per part.
    assert [r.headers["idempotency-key"] for r in server.uploads] == ["up-1", "up-1.1", "up-1.2"]


def test_bodies_stay_under_the_byte_limit_and_a_huge_document_goes_alone() -> None:
    line = len(json.dumps({"id": "d0", "text": "x" * 100}).encode()) + 1
    limits = Limits(max_documents=1000, max_bytes=3 * line)
    parts = list(bodies([*docs(7, 100), {"id": "big", "text": "y" * 10_000}], limits))
    assert [n for _, n in parts] == [3, 3, 1, 1]
    assert all(len(body) <= limits.max_bytes for body, _ in parts[:3])
    assert b"big" in parts[3][0]


def test_the_jobs_created_before_a_refused_part_stay_known() -> None:
    def refuse_third(request: httpx.Request) -> httpx.Response:
        if len(server.uploads) == 3:
            return httpx.Response(
                413, json={"error": {"code": "payload_too_large", "message": "too big"}}
            )
        return httpx.Response(202, json={"id": f"job-{len(server.uploads)}", "documents": 2})

    server = FakeServer({("POST", "/v1/jobs"): refuse_third})
    client = DocqClient(transport=httpx.MockTransport(server), limits=Limits(max_documents=2))
    from client.sdk import Submission

    submission = Submission()
    with pytest.raises(errors.Refused) as refused:
        client.submit_many(docs(6), into=submission)
    assert refused.value.status == 413 and refused.value.message == "too big"
    assert submission.ids == ["job-1", "job-2"]


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        (401, errors.Unauthorized),
        (404, errors.NotFound),
        (409, errors.Refused),
        (413, errors.Refused),
        (429, errors.RateLimited),
        (422, errors.Refused),
        (503, errors.ServerError),
    ],
)
def test_error_answers_become_the_client_error_of_their_status(
    code: int, cls: type[errors.APIError]
) -> None:
    body = {"error": {"code": "some_code", "message": "the server's words", "detail": {"a": 1}}}
    server = FakeServer({("GET", "/v1/jobs/j"): lambda r: httpx.Response(code, json=body)})
    with pytest.raises(cls) as raised:
        DocqClient(transport=httpx.MockTransport(server)).job("j")
    assert (raised.value.status, raised.value.code) == (code, "some_code")
    assert raised.value.message == "the server's words" and raised.value.detail == {"a": 1}


def test_an_error_without_a_docq_body_keeps_the_text() -> None:
    server = FakeServer({("GET", "/v1/models"): lambda r: httpx.Response(502, text="Bad Gateway")})
    with pytest.raises(errors.ServerError, match="Bad Gateway"):
        DocqClient(transport=httpx.MockTransport(server)).models()


def test_no_answer_is_unreachable_naming_the_server() -> None:
    def refused(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("Connection refused", request=request)

    client = DocqClient("http://docq.invalid:1", transport=httpx.MockTransport(refused))
    with pytest.raises(errors.Unreachable, match=r"docq\.invalid:1.*Connection refused"):
        client.job("j")


def test_wait_all_polls_unfinished_jobs_and_reports_summed_progress() -> None:
    states = {
        "a": iter([status("a", "running", 1), status("a", "succeeded", 4)]),
        "b": iter([status("b", "queued", 0), status("b", "running", 2), status("b", "failed", 4)]),
    }
    server = FakeServer(
        {
            ("GET", f"/v1/jobs/{j}"): (lambda r, j=j: httpx.Response(200, json=next(states[j])))
            for j in states
        }
    )
    seen = []
    final = DocqClient(transport=httpx.MockTransport(server)).wait_all(
        ["a", "b"], poll_s=0, on_progress=seen.append
    )
    assert [j["status"] for j in final] == ["succeeded", "failed"]
    assert [(p.done, p.jobs_final) for p in seen] == [(1, 0), (6, 1), (8, 2)]
    assert seen[-1].finished and seen[-1].documents == 8
    # a final job is not asked again
    assert [r.url.path for r in server.requests].count("/v1/jobs/a") == 2


def test_wait_gives_up_after_its_timeout() -> None:
    server = FakeServer(
        {("GET", "/v1/jobs/j"): lambda r: httpx.Response(200, json=status("j", "running", 1))}
    )
    with pytest.raises(errors.WaitTimeout):
        DocqClient(transport=httpx.MockTransport(server)).wait("j", poll_s=0, timeout_s=0)


def results_pages(total: int, available: int) -> Handler:
    """A results endpoint over `total` documents of which the first `available` are done."""

    def page(request: httpx.Request) -> httpx.Response:
        start, limit = int(request.url.params["cursor"]), int(request.url.params["limit"])
        end = min(start + limit, available)
        data = [{"id": f"d{i}", "label": "invoice"} for i in range(start, end)]
        nxt = None if end >= total else str(end)
        return httpx.Response(200, json={"data": data, "next_cursor": nxt})

    return page


def test_results_are_fetched_page_by_page_as_they_are_consumed() -> None:
    server = FakeServer({("GET", "/v1/jobs/j/results"): results_pages(10, 10)})
    results = DocqClient(transport=httpx.MockTransport(server)).results("j", page=4)
    assert server.requests == []  # nothing asked before the first result is wanted
    assert next(results)["id"] == "d0"
    assert len(server.requests) == 1
    assert [r["id"] for r in results] == [f"d{i}" for i in range(1, 10)]
    assert [r.url.params["cursor"] for r in server.requests] == ["0", "4", "8"]


def test_results_of_a_running_job_end_at_the_first_document_not_done() -> None:
    server = FakeServer({("GET", "/v1/jobs/j/results"): results_pages(10, 6)})
    got = list(DocqClient(transport=httpx.MockTransport(server)).results("j", page=4))
    assert [r["id"] for r in got] == [f"d{i}" for i in range(6)]


def test_cancel_sends_delete() -> None:
    server = FakeServer(
        {("DELETE", "/v1/jobs/j"): lambda r: httpx.Response(200, json=status("j", "cancelled", 0))}
    )
    assert DocqClient(transport=httpx.MockTransport(server)).cancel("j")["status"] == "cancelled"


def test_the_async_client_does_the_same() -> None:
    states = iter([status("job-0", "running", 2, 3), status("job-0", "succeeded", 3, 3)])
    server = FakeServer(
        {
            ("GET", "/v1/jobs/job-0"): lambda r: httpx.Response(200, json=next(states)),
            ("GET", "/v1/jobs/job-0/results"): results_pages(3, 3),
        }
    )

    async def scenario() -> tuple[Any, ...]:
        async with AsyncDocqClient(
            api_key="k", transport=httpx.MockTransport(server), limits=Limits(max_documents=5)
        ) as client:
            submission = await client.submit_many(docs(3))
            seen: list[int] = []
            final = await client.wait_all(
                submission.ids, poll_s=0, on_progress=lambda p: seen.append(p.done)
            )
            got = [r["id"] async for r in client.results_all(submission.ids, page=2)]
            return submission.ids, final[0]["status"], seen, got

    ids, final, seen, got = asyncio.run(scenario())
    assert ids == ["job-0"] and final == "succeeded" and seen == [2, 3]
    assert got == ["d0", "d1", "d2"]
    assert {r.headers["authorization"] for r in server.requests} == {"Bearer k"}


def test_the_async_client_maps_errors_the_same_way() -> None:
    def unauthorized(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"error": {"code": "unauthorized", "message": "bad key"}})

    async def scenario() -> None:
        async with AsyncDocqClient(transport=httpx.MockTransport(unauthorized)) as client:
            await client.models()

    with pytest.raises(errors.Unauthorized, match="bad key"):
        asyncio.run(scenario())


SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def signed(body: str, secret: str = SECRET) -> dict[str, str]:
    now = datetime.now(UTC)
    signature = standardwebhooks.Webhook(secret).sign("msg_j", now, body)
    return {
        "webhook-id": "msg_j",
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signature,
    }


def test_verify_webhook_returns_the_event_of_a_good_signature() -> None:
    body = json.dumps({"type": "job.succeeded", "data": {"id": "j"}})
    headers = {k.title(): v for k, v in signed(body).items()}  # header case does not matter
    assert verify_webhook(body.encode(), headers, SECRET)["type"] == "job.succeeded"


@pytest.mark.parametrize("tamper", ["body", "secret", "bad-secret", "no-headers"])
def test_verify_webhook_refuses_anything_else(tamper: str) -> None:
    body = json.dumps({"type": "job.succeeded", "data": {"id": "j"}})
    headers, secret = signed(body), SECRET
    if tamper == "body":
        body = body.replace("succeeded", "failed")
    elif tamper == "secret":
        secret = "whsec_" + "A" * 32
    elif tamper == "bad-secret":
        secret = "whsec_not base64!"
    else:
        headers = {}
    with pytest.raises(errors.InvalidSignature):
        verify_webhook(body, headers, secret)


def test_documents_from_paths_texts_and_ndjson(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("INVOICE 1", encoding="utf-8")
    (tmp_path / "b.ndjson").write_text(
        '{"id": "n1", "text": "one"}\n\n{"id": "n2", "text": "two"}\n', encoding="utf-8"
    )
    got = list(from_paths([tmp_path / "a.txt", tmp_path / "b.ndjson"]))
    assert got == [
        {"id": "a.txt", "text": "INVOICE 1"},
        {"id": "n1", "text": "one"},
        {"id": "n2", "text": "two"},
    ]
    assert list(from_texts(["x", "y"], prefix="t-")) == [
        {"id": "t-0", "text": "x"},
        {"id": "t-1", "text": "y"},
    ]
    stream = io.BytesIO(b'{"id": "a", "text": "t"}\nnot json\n')
    with pytest.raises(ValueError, match="line 2: not JSON"):
        list(from_ndjson(stream))


def test_close_closes_only_the_http_client_it_made() -> None:
    server = FakeServer()
    own = DocqClient(transport=httpx.MockTransport(server))
    given = httpx.Client(base_url="http://docq", transport=httpx.MockTransport(server))
    with DocqClient(http=given):
        pass
    with own:
        pass
    assert own.http.is_closed and not given.is_closed
    given.close()


def test_a_part_over_the_tenants_limit_waits_retry_after_and_is_sent_again() -> None:
    answers = iter([429, 429, 202, 429, 202])

    def limited(request: httpx.Request) -> httpx.Response:
        code = next(answers)
        if code == 429:
            body = {"error": {"code": "tenant_limit_exceeded", "message": "too many jobs"}}
            return httpx.Response(429, json=body, headers={"retry-after": "0"})
        return httpx.Response(202, json={"id": f"job-{len(server.uploads)}", "documents": 2})

    server = FakeServer({("POST", "/v1/jobs"): limited})
    client = DocqClient(transport=httpx.MockTransport(server), limits=Limits(max_documents=2))
    submission = client.submit_many(docs(4), idempotency_key="k")
    assert submission.ids == ["job-3", "job-5"]
    assert [r.headers["idempotency-key"] for r in server.uploads] == ["k", "k", "k", "k.1", "k.1"]


def test_a_part_that_stays_limited_raises_rate_limited_with_retry_after() -> None:
    from client.sdk import RATE_LIMIT_WAITS

    def limited(request: httpx.Request) -> httpx.Response:
        body = {"error": {"code": "overloaded", "message": "busy"}}
        return httpx.Response(429, json=body, headers={"retry-after": "0"})

    server = FakeServer({("POST", "/v1/jobs"): limited})
    with pytest.raises(errors.RateLimited) as raised:
        DocqClient(transport=httpx.MockTransport(server)).submit_many(docs(1))
    assert raised.value.retry_after == 0 and isinstance(raised.value, errors.Refused)
    assert len(server.uploads) == RATE_LIMIT_WAITS + 1
