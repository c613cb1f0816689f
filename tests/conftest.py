"""Shared fixtures: real redis-server, tritonserver, Celery worker and the API, on free ports."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from devstack import credentials
from devstack.services import REPO, celery_worker, redis_server, settings_env, triton_server
from docq.blobs import DirectoryStore
from docq.config import Settings
from docq.store import JobStore

pytest_plugins = ["tests.tiers", "tests.failure_logs"]  # tier markers; failed tests show logs

MODEL_REPOSITORY = REPO / "model_repository"
TENANT = "tests"  # the tenant of the `api` client's key


@pytest.fixture(scope="session")
def service_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("services")


@pytest.fixture(scope="session")
def redis_url(service_dir: Path) -> Iterator[str]:
    with redis_server(service_dir / "redis") as url:
        yield url


@pytest.fixture(scope="session")
def triton_url(service_dir: Path) -> Iterator[str]:
    if not (MODEL_REPOSITORY / "doc-type" / "1" / "model.onnx").exists():
        pytest.fail("the demo model is not built: run `make test` (or `make model`) first")
    with triton_server(MODEL_REPOSITORY, service_dir / "triton.log") as url:
        yield url


@pytest.fixture(scope="session")
def settings(redis_url: str, triton_url: str, service_dir: Path) -> Settings:
    # Small shards so that a 50-document upload spreads over several tasks, and a small
    # head so that every upload of more than 16 text documents is stored in two writes
    # (api/submissions.py), the path large uploads take, under every e2e and fault test.
    return Settings(
        redis_url=redis_url,
        triton_grpc_url=triton_url,
        model_repository=MODEL_REPOSITORY,
        blob_url=(service_dir / "blobs").as_uri(),
        manifest_url=(service_dir / "objects").as_uri(),  # manifest jobs' (docs/manifests.md)
        shard_size=8,
        accept_head_shards=2,
        task_retry_backoff_s=1,
        # Webhooks: receivers on 127.0.0.1, and retries quick enough for a test.
        webhook_allow_private_networks=True,
        webhook_timeout_s=1.0,
        webhook_max_attempts=5,
        webhook_backoff_s=0.2,
        webhook_backoff_max_s=1.0,
    )


@pytest.fixture(scope="session")
def worker(settings: Settings, service_dir: Path) -> Iterator[object]:
    """A worker on both classification queues (bulk and small-job lane)."""
    env = settings_env(settings)
    log = service_dir / "worker.log"
    with celery_worker(env, log, queues="cpu,cpu-priority", concurrency=4) as proc:
        yield proc


@pytest.fixture(scope="session")
def priority_worker(settings: Settings, service_dir: Path) -> Iterator[object]:
    """A worker of the small-job lane only, as `make up` runs it."""
    log = service_dir / "priority-worker.log"
    env = settings_env(settings)
    with celery_worker(env, log, queues="cpu-priority", name="priority", concurrency=4) as p:
        yield p


@pytest.fixture(scope="session")
def extract_worker(settings: Settings, service_dir: Path) -> Iterator[object]:
    """A worker of the `extract` queue (files read into text), as `make up` runs it."""
    log = service_dir / "extract-worker.log"
    env = settings_env(settings)
    with celery_worker(env, log, queues="extract", name="extract", concurrency=2) as proc:
        yield proc


@pytest.fixture(scope="session")
def webhooks_worker(settings: Settings, service_dir: Path) -> Iterator[object]:
    """A Celery worker on the `webhooks` queue (webhook deliveries)."""
    log = service_dir / "webhooks-worker.log"
    env = settings_env(settings)
    with celery_worker(env, log, queues="webhooks", name="webhooks", pool="prefork") as proc:
        yield proc


def tenant_headers(settings: Settings, tenant: str = TENANT) -> dict[str, str]:
    """`Authorization` with a new key of `tenant` (TENANT unless named)."""
    return credentials.tenant_headers(settings, tenant)


@pytest.fixture(scope="session")
def auth_headers(settings: Settings) -> dict[str, str]:
    """`Authorization` with a key of TENANT, for every client of the session's API."""
    return tenant_headers(settings)


@pytest.fixture(scope="session")
def api(settings: Settings, auth_headers: dict[str, str]) -> Iterator[TestClient]:
    from api.main import create_app

    with TestClient(create_app(settings), headers=auth_headers) as client:
        yield client


# The documents of the fault tests that compare with a fault-free run (Triton and Redis
# outages): 600 one-window documents, classified once per session by `fault_free_labels`.
FAULT_DOCUMENTS = 600


def fault_documents() -> list[dict[str, str]]:
    from corpus.doc_type import generate

    return [{"id": d.id, "text": d.text[:300]} for d in generate(FAULT_DOCUMENTS, seed=91)]


@pytest.fixture(scope="session")
def fault_free_labels(api: TestClient, worker: object) -> list[tuple[str, str]]:
    """(id, label) of every fault document from a fault-free run through the session's
    stack: one reference for every fault test, not one each (the same model and code)."""
    from tests.support.jobs import all_results, wait_until_final

    job = api.post("/v1/jobs", json={"documents": fault_documents()}).json()
    done, _ = wait_until_final(api, job["id"], timeout=900)
    assert done["progress"] == {"documents_done": FAULT_DOCUMENTS, "documents_failed": 0}
    return [(r["id"], r["label"]) for r in all_results(api, job["id"], limit=200)]


@pytest.fixture
def store(redis_url: str, tmp_path: Path) -> JobStore:
    blobs = DirectoryStore(tmp_path / "blobs")
    return JobStore.from_url(redis_url, shard_size=4, ttl_s=3600, blobs=blobs)


# --- models and model control (issue 5) ----------------------------------------------


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer, 32-wide BERT classifier over doc-type's labels and tokenizer (random weights).

    Real enough to export, quantize, serve and validate; small enough to do so in seconds.
    """
    from corpus.doc_type import LABELS
    from docq.text.tokens import TOKENIZER_FILES
    from tests.support.tiny import tiny_bert

    path = tiny_bert(tmp_path_factory.mktemp("tiny") / "checkpoint", LABELS)
    for name in TOKENIZER_FILES:
        shutil.copyfile(MODEL_REPOSITORY / "doc-type" / "tokenizer" / name, path / name)
    return path


def link_model(repository: Path, name: str, source: Path | None = None) -> Path:
    """Put a built model of model_repository/ into `repository` without copying its weights.

    The model folder and its version folders are real (so versions can be published into
    them); weights, labels and tokenizer are symbolic links to the built model.
    """
    source = source or MODEL_REPOSITORY / name
    if not (source / "1").is_dir():
        pytest.fail(f"{name} is not built: run `make model`")
    target = repository / name
    target.mkdir(parents=True)
    shutil.copyfile(source / "config.pbtxt", target / "config.pbtxt")
    for entry in ("labels.txt", "tokenizer"):
        (target / entry).symlink_to(source / entry)
    (target / "1").mkdir()
    for f in (source / "1").iterdir():  # files, and the runtime's package (docq_runtime/)
        (target / "1" / f.name).symlink_to(f)
    return target
