"""Per-process resources the routes depend on, created in the app's lifespan."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from celery import Celery
from fastapi import Depends, Request

from docq.catalog import ModelCatalog
from docq.config import Settings
from docq.store import JobStore


@dataclass
class Resources:
    """What one API process holds: settings, the job store, Triton's catalogue, the queue."""

    settings: Settings
    store: JobStore
    catalog: ModelCatalog
    celery: Celery


def get_resources(request: Request) -> Resources:
    return request.app.state.resources  # type: ignore[no-any-return]


Deps = Annotated[Resources, Depends(get_resources)]
