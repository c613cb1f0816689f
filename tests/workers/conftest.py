"""Fixtures of the modules that need a redis-server of their own (test_retries,
test_sweeper): the schedule and the leases they test are global keys, which the shared
session Redis of tests/conftest.py would carry from one test to the next."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from celery import Celery

from devstack.services import redis_server
from docq.config import Settings
from docq.queue import make_celery
from docq.store import JobStore


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    """A redis-server of the test's own: the broker and the job store."""
    with redis_server(tmp_path / "redis") as url:
        yield url


@pytest.fixture
def own_store(url: str) -> JobStore:
    """The job store on `url` (tests/conftest.py's `store` is the shared Redis's)."""
    return JobStore.from_url(url, shard_size=4, ttl_s=3600)


@pytest.fixture
def celery(url: str) -> Celery:
    return make_celery(Settings(redis_url=url))
