"""The API's own tests need no worker, and must pass whichever tests ran before them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from docq.config import Settings


def unworked(settings: Settings) -> Settings:
    """`settings` with a Celery broker no worker reads (another database of the same Redis):
    jobs made through it stay queued, even once an earlier test started the shared workers."""
    return settings.model_copy(update={"broker_url": settings.redis_url.rsplit("/", 1)[0] + "/14"})


@pytest.fixture(scope="session")
def api(settings: Settings, auth_headers: dict[str, str]) -> Iterator[TestClient]:
    from api.main import create_app

    with TestClient(create_app(unworked(settings)), headers=auth_headers) as client:
        yield client
