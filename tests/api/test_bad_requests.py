"""A catalogue of bad requests against a real API process: each gets a precise 4xx JSON
error naming what is wrong, none creates a job or enqueues a task (on either classification
queue), and the server is still up after all of them.

The API runs as its own process (devstack.services.api_server) on a Redis of its own, with
small limits so that every limit is reached by a real body (streamed, not announced by a
false Content-Length), private webhook networks allowed (so that link-local and metadata
addresses are shown refused even then), and no Triton: nothing here may get that far.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import redis
from fastapi import FastAPI
from fastapi.testclient import TestClient

from devstack.services import api_server, redis_server
from docq.config import Settings
from docq.queue import CPU_QUEUE, PRIORITY_QUEUE, bulk_lanes
from docq.store import Document, JobStore
from tests.conftest import MODEL_REPOSITORY, TENANT, settings_env, tenant_headers
from tests.polling import until
from tests.test_metrics_e2e import samples, value

MAX_DOCUMENTS = 50
MAX_CHARS = 1000
MAX_BYTES = 64 * 1024
PAGE_MAX = 100
GOOD = {"id": "a", "text": "INVOICE No. 1 Total due 10.00 EUR"}
JSON = "application/json"


@dataclass(frozen=True)
class Bad:
    """One bad request and the error it must get."""

    name: str
    status: int
    code: str
    says: str  # in the message: what is wrong
    method: str = "POST"
    path: str = "/v1/jobs"
    kwargs: dict[str, Any] = field(default_factory=dict)
    auth: bool = True


def js(body: Any) -> dict[str, Any]:
    return {"content": json.dumps(body).encode(), "headers": {"content-type": "application/json"}}


def raw_json(body: bytes) -> dict[str, Any]:
    return {"content": body, "headers": {"content-type": "application/json"}}


def ndjson(body: bytes) -> dict[str, Any]:
    return {"content": body, "headers": {"content-type": "application/x-ndjson"}}


def chunked(body: bytes, ctype: str) -> dict[str, Any]:
    """A body streamed in chunks with no Content-Length: only the stream's count can stop it."""

    def chunks() -> Iterator[bytes]:
        for i in range(0, len(body), 4096):
            yield body[i : i + 4096]

    return {"content": chunks(), "headers": {"content-type": ctype}}


def multipart(files: list[tuple[str, bytes]], **fields: str) -> dict[str, Any]:
    return {"files": [("files", (name, data)) for name, data in files], "data": fields}


def lines(docs: list[Any]) -> bytes:
    return b"".join(json.dumps(d).encode() + b"\n" for d in docs)


def many(n: int) -> list[dict[str, str]]:
    return [{"id": f"d{i}", "text": f"text {i}"} for i in range(n)]


def hook(url: str, **extra: Any) -> dict[str, Any]:
    return js({"documents": [GOOD], "webhook": {"url": url, **extra}})


def multipart_chunked(files: list[tuple[str, bytes]]) -> dict[str, Any]:
    request = httpx.Request("POST", "http://x", files=[("files", f) for f in files])
    ctype = request.headers["content-type"]
    return chunked(request.read(), ctype)


DEEP = b"[" * 20_000 + b"]" * 20_000  # inside the byte limit
DEEP_OBJECT = b'{"a":' * 10_000 + b"1" + b"}" * 10_000

CATALOGUE = [
    # --- JSON bodies ---------------------------------------------------------------
    Bad("malformed JSON", 400, "malformed_body", "malformed JSON", kwargs=raw_json(b'{"doc')),
    Bad("deeply nested array", 400, "malformed_body", "nested too deeply", kwargs=raw_json(DEEP)),
    Bad(
        "deeply nested object",
        400,
        "malformed_body",
        "nested too deeply",
        kwargs=raw_json(DEEP_OBJECT),
    ),
    Bad("not UTF-8", 400, "malformed_body", "malformed JSON", kwargs=raw_json(b'{"\xff\xfe": 1}')),
    Bad(
        "raw NUL byte in JSON",
        400,
        "malformed_body",
        "malformed JSON",
        kwargs=raw_json(b'{"documents": [{"id": "a", "text": "x\x00y"}]}'),
    ),
    Bad("JSON is not an object", 422, "invalid_request", "upload", kwargs=js([GOOD])),
    Bad("no documents", 422, "invalid_request", "documents", kwargs=js({"documents": []})),
    Bad(
        "documents not a list",
        422,
        "invalid_request",
        "documents",
        kwargs=js({"documents": "abc"}),
    ),
    Bad(
        "document not an object",
        422,
        "invalid_request",
        "document 0",
        kwargs=js({"documents": ["text"]}),
    ),
    Bad(
        "document without text",
        422,
        "invalid_request",
        "document 1: text",
        kwargs=js({"documents": [GOOD, {"id": "b"}]}),
    ),
    Bad(
        "empty text",
        422,
        "invalid_request",
        "document 0: text",
        kwargs=js({"documents": [{"id": "a", "text": ""}]}),
    ),
    Bad(
        "whitespace-only text",
        422,
        "invalid_request",
        "only whitespace",
        kwargs=js({"documents": [GOOD, {"id": "b", "text": " \n\t\u00a0 "}]}),
    ),
    Bad(
        "id not a string",
        422,
        "invalid_request",
        "document 0: id",
        kwargs=js({"documents": [{"id": 7, "text": "x"}]}),
    ),
    Bad(
        "id too long",
        422,
        "invalid_request",
        "document 0: id",
        kwargs=js({"documents": [{"id": "i" * 513, "text": "x"}]}),
    ),
    Bad(
        "duplicate ids",
        422,
        "invalid_request",
        "duplicate",
        kwargs=js({"documents": [GOOD, GOOD]}),
    ),
    Bad(
        "lone surrogate in an id",
        422,
        "invalid_request",
        "document 0: id: input should be a valid string",
        kwargs=raw_json(b'{"documents": [{"id": "\\ud800", "text": "x"}]}'),
    ),
    Bad(
        "lone surrogate in a text",
        422,
        "invalid_request",
        "document 1: text: input should be a valid string",
        kwargs=raw_json(
            b'{"documents": [{"id": "a", "text": "x"}, {"id": "b", "text": "\\udfff"}]}'
        ),
    ),
    Bad(
        "NUL escape in a text",
        422,
        "invalid_request",
        "NUL",
        kwargs=raw_json(b'{"documents": [{"id": "a", "text": "x\\u0000y"}]}'),
    ),
    Bad(
        "unknown top-level field",
        422,
        "invalid_request",
        "priority",
        kwargs=js({"documents": [GOOD], "priority": "high"}),
    ),
    Bad(
        "empty model name",
        422,
        "invalid_request",
        "model",
        kwargs=js({"model": "", "documents": [GOOD]}),
    ),
    Bad(
        "text over the character limit",
        413,
        "payload_too_large",
        f"the limit is {MAX_CHARS}",
        kwargs=js({"documents": [{"id": "a", "text": "x" * (MAX_CHARS + 1)}]}),
    ),
    Bad(
        "too many documents",
        413,
        "payload_too_large",
        f"the limit is {MAX_DOCUMENTS}",
        kwargs=js({"documents": many(MAX_DOCUMENTS + 1)}),
    ),
    Bad(
        "body over the byte limit, streamed",
        413,
        "payload_too_large",
        f"larger than {MAX_BYTES} bytes",
        kwargs=chunked(json.dumps({"documents": [GOOD] * 2000}).encode(), "application/json"),
    ),
    Bad(
        "body over the byte limit, announced",
        413,
        "payload_too_large",
        f"larger than {MAX_BYTES} bytes",
        kwargs=raw_json(b" " * (MAX_BYTES + 1)),
    ),
    # --- webhooks (private networks allowed on this server) ------------------------
    Bad("webhook scheme", 422, "webhook_refused", "scheme", kwargs=hook("ftp://example.com/")),
    Bad(
        "webhook to the metadata address",
        422,
        "webhook_refused",
        "metadata",
        kwargs=hook("http://169.254.169.254/latest/meta-data/"),
    ),
    Bad(
        "webhook to AWS metadata over IPv6",
        422,
        "webhook_refused",
        "metadata",
        kwargs=hook("http://[fd00:ec2::254]/"),
    ),
    Bad(
        "webhook to a link-local address",
        422,
        "webhook_refused",
        "link-local",
        kwargs=hook("http://169.254.10.1:8080/hook"),
    ),
    Bad(
        "webhook to IPv6 link-local",
        422,
        "webhook_refused",
        "link-local",
        kwargs=hook("http://[fe80::1]/"),
    ),
    Bad(
        "webhook with credentials",
        422,
        "webhook_refused",
        "credentials",
        kwargs=hook("http://user:pw@127.0.0.1:9/"),
    ),
    Bad(
        "webhook secret in the query string",
        422,
        "webhook_refused",
        "access_token",
        kwargs=hook("http://127.0.0.1:9/hook?job=1&access_token=hunter2"),
    ),
    Bad(
        "webhook secret malformed",
        422,
        "webhook_refused",
        "whsec_",
        kwargs=hook("http://127.0.0.1:9/", secret="hunter2"),
    ),
    Bad(
        "webhook unknown field",
        422,
        "invalid_request",
        "webhook",
        kwargs=hook("http://127.0.0.1:9/", retries=3),
    ),
    # --- content types and encodings -------------------------------------------------
    Bad(
        "no Content-Type",
        415,
        "unsupported_media_type",
        "no Content-Type",
        kwargs={"content": json.dumps({"documents": [GOOD]}).encode()},
    ),
    Bad(
        "text/plain",
        415,
        "unsupported_media_type",
        "text/plain",
        kwargs={"content": b"hello", "headers": {"content-type": "text/plain"}},
    ),
    Bad(
        "compressed body",
        415,
        "unsupported_media_type",
        "Content-Encoding",
        kwargs={
            "content": b"\x1f\x8b\x08\x00",
            "headers": {"content-type": "application/json", "content-encoding": "gzip"},
        },
    ),
    # --- NDJSON ----------------------------------------------------------------------
    Bad(
        "NDJSON malformed line",
        400,
        "malformed_body",
        "line 2",
        kwargs=ndjson(lines([GOOD]) + b'{"id": "b", "text": \n'),
    ),
    Bad(
        "NDJSON CRLF lines, third malformed",
        400,
        "malformed_body",
        "line 3",
        kwargs=ndjson(b'{"id": "a", "text": "x"}\r\n\r\n{"id": \r\n'),
    ),
    Bad(
        "NDJSON line nested too deeply",
        400,
        "malformed_body",
        "line 1: nested too deeply",
        kwargs=ndjson(DEEP + b"\n"),
    ),
    Bad(
        "NDJSON not UTF-8",
        400,
        "malformed_body",
        "line 1",
        kwargs=ndjson(b'{"id": "a", "text": "\xff"}\n'),
    ),
    Bad(
        "NDJSON raw NUL byte",
        400,
        "malformed_body",
        "line 1",
        kwargs=ndjson(b'{"id": "a", "text": "x\x00"}\n'),
    ),
    Bad(
        "NDJSON NUL escape in an id",
        422,
        "invalid_request",
        "document 0: id: contains a NUL",
        kwargs=ndjson(b'{"id": "a\\u0000", "text": "x"}\n'),
    ),
    Bad(
        "NDJSON whitespace-only text",
        422,
        "invalid_request",
        "document 0: text: only whitespace",
        kwargs=ndjson(lines([{"id": "a", "text": "   "}])),
    ),
    Bad(
        "NDJSON only blank lines",
        422,
        "invalid_request",
        "documents",
        kwargs=ndjson(b"\n\r\n  \n"),
    ),
    Bad(
        "NDJSON too many documents",
        413,
        "payload_too_large",
        f"more than {MAX_DOCUMENTS} documents",
        kwargs=ndjson(lines(many(MAX_DOCUMENTS + 5))),
    ),
    # --- multipart ---------------------------------------------------------------------
    Bad(
        "multipart without files",
        422,
        "invalid_request",
        "documents",
        kwargs={"data": {"model": "doc-type"}, "files": [("other", ("x", b"y"))]},
    ),
    # A file that is not UTF-8, holds a NUL, is only whitespace (and, below, one over its
    # cap) is a failed document since issue 37, not a refusal: test_invalid_documents.py.
    Bad(
        "multipart too many files",
        413,
        "payload_too_large",
        f"more than {MAX_DOCUMENTS} files",
        kwargs=multipart([(f"f{i}.txt", b"x") for i in range(MAX_DOCUMENTS + 1)]),
    ),
    Bad(
        "multipart over the byte limit, streamed",
        413,
        "payload_too_large",
        f"larger than {MAX_BYTES} bytes",
        kwargs=multipart_chunked([(f"f{i}.txt", b"x" * 3900) for i in range(20)]),
    ),
    Bad(
        "multipart without a boundary",
        400,
        "malformed_body",
        "boundary",
        kwargs={"content": b"--x\r\n", "headers": {"content-type": "multipart/form-data"}},
    ),
    # --- jobs and results ----------------------------------------------------------------
    Bad("unknown job", 404, "not_found", "'nope'", method="GET", path="/v1/jobs/nope"),
    Bad(
        "malformed job id",
        404,
        "not_found",
        "not found",
        method="GET",
        path="/v1/jobs/%ED%A0%80%00",
    ),
    Bad("cancel unknown job", 404, "not_found", "'nope'", method="DELETE", path="/v1/jobs/nope"),
    Bad(
        "superscript cursor",
        422,
        "invalid_request",
        "cursor",
        method="GET",
        path="/v1/jobs/{job}/results?cursor=%C2%B2",
    ),
    Bad(
        "negative cursor",
        422,
        "invalid_request",
        "cursor",
        method="GET",
        path="/v1/jobs/{job}/results?cursor=-1",
    ),
    Bad(
        "limit 0",
        422,
        "invalid_request",
        "limit",
        method="GET",
        path="/v1/jobs/{job}/results?limit=0",
    ),
    Bad(
        "limit above the page max",
        422,
        "invalid_request",
        f"largest page, {PAGE_MAX}",
        method="GET",
        path=f"/v1/jobs/{{job}}/results?limit={PAGE_MAX + 1}",
    ),
    Bad(
        "limit not a number",
        422,
        "invalid_request",
        "limit",
        method="GET",
        path="/v1/jobs/{job}/results?limit=ten",
    ),
    Bad(
        "Idempotency-Key too long",
        422,
        "invalid_request",
        "idempotency-key",
        kwargs={
            "json": {"documents": [GOOD]},
            "headers": {"idempotency-key": "k" * 256},
        },
    ),
    Bad("method not allowed", 405, "method_not_allowed", "Method Not Allowed", method="PUT"),
    Bad("no such route", 404, "not_found", "Not Found", method="GET", path="/v1/nowhere"),
    Bad("no API key", 401, "unauthorized", "", kwargs=js({"documents": [GOOD]}), auth=False),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Settings]]:
    tmp = tmp_path_factory.mktemp("bad-requests")
    with redis_server(tmp / "redis") as redis_url:
        settings = Settings(
            redis_url=redis_url,
            triton_grpc_url="127.0.0.1:9",  # nothing answers: no request may need Triton
            model_repository=MODEL_REPOSITORY,
            max_documents_per_job=MAX_DOCUMENTS,
            max_document_chars=MAX_CHARS,
            max_upload_bytes=MAX_BYTES,
            results_page_max=PAGE_MAX,
            tenant_max_queued_documents=MAX_DOCUMENTS,
            webhook_allow_private_networks=True,
            max_parsing_uploads=1,  # requests here come one at a time, but for the one below
        )
        with api_server(settings_env(settings), tmp / "api.log") as url:
            yield url, settings


@pytest.fixture(scope="module")
def client(server: tuple[str, Settings]) -> Iterator[httpx.Client]:
    url, settings = server
    with httpx.Client(base_url=url, headers=tenant_headers(settings), timeout=60) as c:
        yield c


@pytest.fixture(scope="module")
def job_id(server: tuple[str, Settings]) -> str:
    """A job of the tenant, written directly (a real upload needs Triton)."""
    store = JobStore.from_url(server[1].redis_url, shard_size=8, ttl_s=3600)
    job = store.create_job("doc-type", [Document("a", "x")], tenant=TENANT)
    store.recovery.enqueued(job.id)
    return job.id


def footprint(settings: Settings) -> tuple[set[bytes], dict[str, int], int, int]:
    """Job records, tasks on every classification queue (cpu, its tenant lanes, and
    cpu-priority), jobs listed as not enqueued, jobs listed for audits."""
    r = redis.Redis.from_url(settings.redis_url)
    queues = [CPU_QUEUE, *bulk_lanes(settings.bulk_lanes), PRIORITY_QUEUE]
    return (
        {k for k in r.keys("docq:job:{*}") if isinstance(k, bytes)},
        {q: int(r.llen(q)) for q in queues},
        int(r.zcard("docq:unenqueued")),
        int(r.zcard("docq:active")),
    )


def test_the_catalogue_has_forty_distinct_bad_requests() -> None:
    assert len({bad.name for bad in CATALOGUE}) == len(CATALOGUE) >= 40


@pytest.mark.parametrize("bad", CATALOGUE, ids=lambda b: b.name)
def test_a_bad_request_gets_a_precise_json_4xx_and_creates_nothing(
    bad: Bad, client: httpx.Client, server: tuple[str, Settings], job_id: str
) -> None:
    before = footprint(server[1])
    kwargs = dict(bad.kwargs)
    if not bad.auth:
        kwargs["headers"] = {**kwargs.get("headers", {}), "authorization": ""}
    resp = client.request(bad.method, bad.path.format(job=job_id), **kwargs)
    assert resp.status_code == bad.status, resp.text[:500]
    assert resp.headers["content-type"].startswith("application/json")
    body = resp.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert {"code", "message", "detail"} <= set(error)
    assert error["code"] == bad.code
    assert bad.says.lower() in error["message"].lower()
    assert "hunter2" not in resp.text  # a secret the request carried is never echoed
    assert footprint(server[1]) == before, "a bad request created a job or a task"
    assert client.get("/healthz").json() == {"status": "ok"}  # the server is still up


def test_the_server_is_up_and_ready_after_the_catalogue(client: httpx.Client) -> None:
    assert client.get("/healthz").status_code == 200
    ready = client.get("/readyz")
    assert ready.status_code == 200  # Triton is down here, which readiness does not require
    assert ready.json()["checks"] == {"redis": True, "triton": False, "store_memory": True}
    assert ready.json()["status"] == "degraded"


def test_what_escapes_is_a_json_500_with_a_request_id(
    server: tuple[str, Settings], caplog: pytest.LogCaptureFixture
) -> None:
    from api.main import create_app

    app: FastAPI = create_app(server[1])

    @app.get("/boom")
    def boom() -> None:
        raise KeyError("a bug")

    with TestClient(app, raise_server_exceptions=False) as c:
        resp = c.get("/boom")
    assert resp.status_code == 500
    error = resp.json()["error"]
    assert error["code"] == "internal_error"
    request_id = error["detail"]["request_id"]
    assert resp.headers["x-request-id"] == request_id
    logged = [r for r in caplog.records if request_id in r.getMessage()]
    assert logged and logged[0].exc_info is not None  # with its traceback


def test_uploads_past_the_parsing_slots_get_429_and_health_still_answers(
    server: tuple[str, Settings],
) -> None:
    """One upload holds this server's only parsing slot (its body still streaming in), as
    `docq_api_uploads_parsing` shows: the next upload gets 429 with Retry-After, /healthz
    answers meanwhile, and once the first is done the slot is free again."""
    url, settings = server
    go_on = threading.Event()
    answers: list[httpx.Response] = []

    def slow_body() -> Iterator[bytes]:
        yield b'{"documents": ['
        go_on.wait(120)
        yield b"]}"

    def upload() -> None:
        with httpx.Client(base_url=url, headers=tenant_headers(settings), timeout=120) as c:
            answers.append(c.post("/v1/jobs", content=slow_body(), headers={"content-type": JSON}))

    def parsing(c: httpx.Client) -> float:
        return value(samples(c.get("/metrics").text), "docq_api_uploads_parsing")

    first = threading.Thread(target=upload)
    try:
        with httpx.Client(base_url=url, headers=tenant_headers(settings), timeout=60) as c:
            assert parsing(c) == 0
            first.start()
            # Nothing else takes the slot until the gauge says the first upload holds it: a
            # probe before that could take it first and leave the first upload its 429.
            until(lambda: parsing(c) == 1, "the first upload to hold the parsing slot", 60)
            busy = c.post("/v1/jobs", json={"documents": []})
            assert busy.status_code == 429, busy.text
            assert busy.json()["error"]["code"] == "overloaded"
            assert int(busy.headers["retry-after"]) > 0
            assert c.get("/healthz").json() == {"status": "ok"}
            go_on.set()
            first.join(60)
            assert answers[0].status_code == 422  # no documents: its own answer, not a 429
            assert parsing(c) == 0
            after = c.post("/v1/jobs", json={"documents": []})
            assert after.status_code == 422  # the slot is free again
    finally:
        go_on.set()
        if first.is_alive():
            first.join(60)
