"""Two uploads with the same Idempotency-Key at the same instant (issue 22, part B): two API
apps (as two API processes would be) on one real redis-server, their requests released
together by a barrier. Exactly one job is created, and both clients get its id: one 202
(the upload that made it) and one 200 (the replay), never a 409 or a second job.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
import redis
from fastapi.testclient import TestClient

from devstack.services import redis_server
from docq.config import Settings
from tests.conftest import MODEL_REPOSITORY, tenant_headers

ROUNDS = 20
# Enough documents that storing the job takes a moment: the window a racing upload meets.
DOCS = [{"id": f"d{i}", "text": f"INVOICE No. {i} Total due {i}.00 EUR " * 20} for i in range(200)]
JOB_RECORD = re.compile(rb"^docq:job:\{[0-9a-f]+\}$")


@pytest.fixture
def clients(tmp_path: Path, triton_url: str) -> Iterator[tuple[redis.Redis, list[TestClient]]]:
    from api.main import create_app

    with redis_server(tmp_path / "redis") as url, ExitStack() as stack:
        settings = Settings(
            redis_url=url, triton_grpc_url=triton_url, model_repository=MODEL_REPOSITORY
        )
        headers = tenant_headers(settings)  # one tenant, one key, two API processes
        apps = [create_app(settings) for _ in range(2)]
        yield (
            redis.Redis.from_url(url),
            [stack.enter_context(TestClient(app, headers=headers)) for app in apps],
        )


def job_records(r: redis.Redis) -> set[bytes]:
    return {k for k in r.scan_iter("docq:job:{*}") if JOB_RECORD.match(k)}


def race(clients: list[TestClient], key: str) -> list[httpx.Response]:
    """Both clients post the same upload with `key`, released at the same instant."""
    barrier = threading.Barrier(len(clients))
    answers: list[httpx.Response | BaseException | None] = [None] * len(clients)

    def post(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            answers[i] = clients[i].post(
                "/v1/jobs",
                json={"model": "doc-type", "documents": DOCS},
                headers={"idempotency-key": key},
            )
        except BaseException as exc:  # reported by the test thread
            answers[i] = exc

    threads = [threading.Thread(target=post, args=(i,)) for i in range(len(clients))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "an upload did not answer within 60 s"
    for answer in answers:
        if isinstance(answer, BaseException) or answer is None:
            raise AssertionError(f"an upload failed: {answer!r}")
    return answers  # type: ignore[return-value]


def test_concurrent_uploads_with_one_key_make_one_job_and_get_its_id(
    clients: tuple[redis.Redis, list[TestClient]],
) -> None:
    r, apis = clients
    for n in range(ROUNDS):
        before = job_records(r)
        answers = race(apis, f"race-{n}")
        statuses = sorted(a.status_code for a in answers)
        ids = {a.json().get("id") for a in answers}
        assert statuses == [200, 202], [a.text[:300] for a in answers]
        assert len(ids) == 1, ids
        created = job_records(r) - before
        assert created == {f"docq:job:{{{ids.pop()}}}".encode()}, created  # exactly one job
