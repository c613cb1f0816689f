"""The docq HTTP API: `uvicorn api.main:app` (or `python -m api.main`)."""

from __future__ import annotations

import copy
import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
from fastapi import Depends, FastAPI

from api import auth, docs, errors, metrics
from api.deps import Resources
from api.routes import health, jobs, models, webhooks
from docq import __version__, logs
from docq.catalog import ModelCatalog
from docq.config import Settings, get_settings
from docq.queue import make_celery
from docq.store import open_store


def create_app(settings: Settings | None = None) -> FastAPI:
    """The API app; clients are created in the lifespan, i.e. in the serving process."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        s = settings or get_settings()
        resources = Resources(
            settings=s,
            store=open_store(s),
            catalog=ModelCatalog(s.triton_endpoints, s.model_repository),
            celery=make_celery(s),
        )
        app.state.resources = resources
        app.state.scrape_registry = metrics.scrape_registry(
            s.celery_broker_url,
            resources.catalog,
            resources.store,
            lanes=s.bulk_lanes,
            sentinel_master=s.redis_sentinel_master,
        )
        # Everything imported and built so far lives as long as the process: move it out of
        # the garbage collector's reach. A full collection otherwise walks ~100k start-up
        # objects (~40 ms on a busy 2-core box), and the allocations of one 1,000-document
        # upload are enough to trigger one in the middle of that upload.
        gc.freeze()
        try:
            yield
        finally:
            resources.catalog.close()
            resources.store.r.close()

    app = FastAPI(
        title="docq", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None
    )
    errors.install(app)
    docs.install(app)  # Swagger UI from the API itself, not from a CDN
    # Every /v1 route needs an API key; /healthz, /readyz and /metrics stay open.
    authenticated = [Depends(auth.tenant)]
    # What any of them may answer: no or a bad key, no such job, Redis down.
    declared = errors.responses(401, 404, 503)
    app.include_router(jobs.router, dependencies=authenticated, responses=declared)
    app.include_router(webhooks.router, dependencies=authenticated, responses=declared)
    app.include_router(models.router, dependencies=authenticated, responses=declared)
    app.include_router(health.router)
    app.include_router(metrics.router)
    return app


app = create_app()


def main() -> None:
    s = get_settings()
    uvicorn.run(
        "api.main:app",
        host=s.api_host,
        port=s.api_port,
        log_level=s.log_level.lower(),
        log_config=log_config(s.log_format, s.log_level),
    )


def log_config(log_format: str, log_level: str) -> dict[str, Any]:
    """uvicorn's logging configuration, with docq's own loggers (api.*, docq.*: they log
    through the root) at DOCQ_LOG_LEVEL on uvicorn's handler."""
    config = logs.uvicorn_config(log_format, log_level) or copy.deepcopy(
        uvicorn.config.LOGGING_CONFIG
    )
    config["root"] = {"handlers": ["default"], "level": log_level}
    return config


if __name__ == "__main__":
    main()
