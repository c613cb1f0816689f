"""The API's own tests need no worker, and must pass whichever tests ran before them."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from docq.config import Settings
from docq.queue import CPU_QUEUE, EXTRACT_QUEUE, PRIORITY_QUEUE, bulk_lanes


def unworked(settings: Settings) -> Settings:
    """`settings` with a Celery broker no worker reads (another database of the same Redis):
    jobs made through it stay queued, even once an earlier test started the shared workers."""
    return settings.model_copy(update={"broker_url": settings.redis_url.rsplit("/", 1)[0] + "/14"})


@pytest.fixture(scope="session")
def api(settings: Settings, auth_headers: dict[str, str]) -> Iterator[TestClient]:
    from api.main import create_app

    with TestClient(create_app(unworked(settings)), headers=auth_headers) as client:
        yield client


def queued(broker: redis.Redis, lanes: int) -> dict[str, list[tuple[str, list[Any]]]]:
    """(task, args) of every message waiting in each shard queue."""
    out = {}
    for q in [EXTRACT_QUEUE, CPU_QUEUE, *bulk_lanes(lanes), PRIORITY_QUEUE]:
        msgs = [json.loads(m) for m in broker.lrange(q, 0, -1)]
        out[q] = [(m["headers"]["task"], json.loads(base64.b64decode(m["body"]))[0]) for m in msgs]
    return out


@pytest.fixture
def broker(api: TestClient) -> Iterator[redis.Redis]:
    """The API's (unread) broker, emptied before the test."""
    r = redis.Redis.from_url(api.app.state.resources.settings.celery_broker_url)
    r.flushdb()
    yield r
