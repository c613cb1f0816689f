"""The docq HTTP API: `uvicorn api.main:app` (or `python -m api.main`)."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn
from fastapi import FastAPI
from prometheus_client import make_asgi_app

from api import errors
from api.deps import Resources
from api.routes import health, jobs, models, webhooks
from docq import __version__
from docq.catalog import ModelCatalog
from docq.config import Settings, get_settings
from docq.queue import make_celery
from docq.store import JobStore


def create_app(settings: Settings | None = None) -> FastAPI:
    """The API app; clients are created in the lifespan, i.e. in the serving process."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        s = settings or get_settings()
        resources = Resources(
            settings=s,
            store=JobStore.from_url(s.redis_url, shard_size=s.shard_size, ttl_s=s.job_ttl_s),
            catalog=ModelCatalog(s.triton_grpc_url, s.model_repository),
            celery=make_celery(s),
        )
        app.state.resources = resources
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

    app = FastAPI(title="docq", version=__version__, lifespan=lifespan)
    errors.install(app)
    app.include_router(jobs.router)
    app.include_router(webhooks.router)
    app.include_router(models.router)
    app.include_router(health.router)
    app.mount("/metrics", make_asgi_app())
    return app


app = create_app()


def main() -> None:
    s = get_settings()
    uvicorn.run("api.main:app", host=s.api_host, port=s.api_port, log_level="info")


if __name__ == "__main__":
    main()
