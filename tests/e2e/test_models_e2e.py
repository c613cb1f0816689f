"""Many models on one Triton, end to end: API -> real Celery worker -> real tritonserver.

The server runs in explicit model-control mode on a repository of its own (doc-type and
doc-lang linked from model_repository/, plus `doc-lang-slow`, the same model whose load
takes seconds) with doc-type loaded at start and pinned, and at most two models resident.
Its own redis keeps its jobs away from the other tests' workers.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import tritonclient.grpc as grpcclient
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from conversion.package import publish_version
from corpus.doc_lang import LANGUAGES
from corpus.doc_lang import generate as doc_lang_documents
from corpus.doc_type import LABELS
from corpus.doc_type import generate as doc_type_documents
from devstack.services import celery_worker, free_port, redis_server, triton_server, wait_for
from docq.config import Settings
from docq.jobs import JobStatus
from tests.conftest import MODEL_REPOSITORY, link_model, settings_env, tenant_headers

pytestmark = pytest.mark.e2e

SLOW_LOAD_S = 6  # how long doc-lang-slow's initialize() sleeps: a window to submit a job in


def _slow_variant(repository: Path) -> None:
    """doc-lang under another name, with a runtime that takes SLOW_LOAD_S to initialise."""
    folder = link_model(repository, "doc-lang-slow", MODEL_REPOSITORY / "doc-lang")
    config = (folder / "config.pbtxt").read_text().replace('"doc-lang"', '"doc-lang-slow"')
    (folder / "config.pbtxt").write_text(config)
    (folder / "1" / "model.py").unlink()
    (folder / "1" / "model.py").write_text(  # the package is beside it (link_model)
        f"""import time

from docq_runtime.onnx_cpu import TritonPythonModel as _Base


class TritonPythonModel(_Base):
    def initialize(self, args):
        time.sleep({SLOW_LOAD_S})
        super().initialize(args)
"""
    )


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Settings, Path]]:
    root = tmp_path_factory.mktemp("models-e2e")
    repo = root / "repo"
    link_model(repo, "doc-type")
    link_model(repo, "doc-lang")
    _slow_variant(repo)
    base = Settings(
        model_repository=repo,
        model_control="explicit",
        model_startup="doc-type",
        model_pinned="doc-type",
        model_max_loaded=2,
        model_idle_s=0,  # unload as soon as a model is least recently used: deterministic
        shard_size=8,
        task_retry_backoff_s=1,
    )
    with (
        redis_server(root / "redis") as redis_url,
        triton_server(repo, root / "triton.log", env=settings_env(base)) as triton_url,
    ):
        settings = base.model_copy(
            update={
                "redis_url": redis_url,
                "triton_grpc_url": triton_url,
                "worker_metrics_port": free_port(),
            }
        )
        from api.main import create_app

        with (
            celery_worker(
                settings_env(settings), root / "worker.log", "cpu,cpu-priority", concurrency=2
            ),
            TestClient(create_app(settings), headers=tenant_headers(settings)) as api,
        ):
            yield api, settings, repo


def _models(api: TestClient) -> dict[str, dict[str, Any]]:
    return {m["name"]: m for m in api.get("/v1/models").json()["data"]}


def _submit(api: TestClient, model: str, docs: list[dict[str, str]]) -> str:
    resp = api.post("/v1/jobs", json={"model": model, "documents": docs})
    assert resp.status_code == 202, resp.text
    return str(resp.json()["id"])


def _wait_final(api: TestClient, job_id: str, timeout: float = 600) -> dict[str, Any]:
    holder: dict[str, Any] = {}

    def final() -> bool:
        holder["job"] = api.get(f"/v1/jobs/{job_id}").json()
        return JobStatus(holder["job"]["status"]).final

    wait_for(final, timeout, f"job {job_id}")
    return holder["job"]


def _results(api: TestClient, job_id: str) -> list[dict[str, Any]]:
    body = api.get(f"/v1/jobs/{job_id}/results", headers={"accept": "application/x-ndjson"})
    return [json.loads(line) for line in body.text.splitlines() if line]


def _lang_docs(n: int, seed: int) -> tuple[list[dict[str, str]], list[str]]:
    docs = doc_lang_documents(n, seed)
    return [{"id": d.id, "text": d.text} for d in docs], [d.label for d in docs]


def test_repository_models_are_listed_with_state_and_version(stack) -> None:  # type: ignore[no-untyped-def]
    api, _, _ = stack
    models = _models(api)
    assert set(models) == {"doc-type", "doc-lang", "doc-lang-slow"}
    doc_type = models["doc-type"]
    assert (doc_type["state"], doc_type["version"], doc_type["pinned"]) == ("ready", "1", True)
    assert doc_type["max_seq_len"] == 512
    assert models["doc-lang-slow"]["state"] in ("available", "unloaded")
    assert models["doc-lang-slow"]["labels"] is None  # known once loaded


def test_job_for_a_model_not_loaded_loads_it_and_succeeds(stack) -> None:  # type: ignore[no-untyped-def]
    api, _, _ = stack
    docs, gold = _lang_docs(12, 515)
    job = _wait_final(api, _submit(api, "doc-lang", docs))
    assert job["status"] == "succeeded" and job["progress"]["documents_failed"] == 0
    results = _results(api, job["id"])
    assert [r["id"] for r in results] == [d["id"] for d in docs]
    assert set(results[0]["scores"]) == set(LANGUAGES)
    assert sum(r["label"] == g for r, g in zip(results, gold, strict=True)) >= 10
    lang = _models(api)["doc-lang"]
    assert (lang["state"], lang["version"], lang["max_seq_len"]) == ("ready", "1", 256)


def _worker_metrics(settings: Settings) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = httpx.get(f"http://127.0.0.1:{settings.worker_metrics_port}/metrics").text
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_worker_metrics_show_the_load_time_and_the_batches(stack) -> None:  # type: ignore[no-untyped-def]
    api, settings, _ = stack
    docs, _ = _lang_docs(5, 516)
    assert _wait_final(api, _submit(api, "doc-lang", docs))["status"] == "succeeded"
    m = _worker_metrics(settings)
    lang = frozenset({("model", "doc-lang")})
    # doc-lang was loaded on demand by the worker (the test before, or this one)
    assert m[("docq_model_load_seconds_count", lang)] >= 1
    assert m[("docq_model_load_seconds_sum", lang)] > 0
    assert m[("docq_model_loads_total", lang | {("outcome", "loaded")})] >= 1
    assert m[("docq_worker_windows_total", lang)] >= 5
    real = m[("docq_worker_tokens_total", lang | {("kind", "real")})]
    computed = m[("docq_worker_tokens_total", lang | {("kind", "computed")})]
    assert 0 < real <= computed
    assert m[("docq_worker_shard_seconds_count", lang)] >= 1


def test_job_for_a_model_being_loaded_waits_for_it(stack) -> None:  # type: ignore[no-untyped-def]
    api, settings, _ = stack
    client = grpcclient.InferenceServerClient(settings.triton_grpc_url)
    loader = threading.Thread(target=client.load_model, args=("doc-lang-slow",))
    loader.start()
    wait_for(lambda: _models(api)["doc-lang-slow"]["state"] == "loading", 60, "loading")
    docs, _ = _lang_docs(10, 616)
    job_id = _submit(api, "doc-lang-slow", docs)  # submitted while Triton is still loading
    job = _wait_final(api, job_id)
    loader.join()
    assert job["status"] == "succeeded"
    assert job["progress"] == {"documents_done": 10, "documents_failed": 0}
    assert all("label" in r for r in _results(api, job_id))
    client.close()


def test_least_recently_used_unpinned_model_makes_room(stack) -> None:  # type: ignore[no-untyped-def]
    api, _, _ = stack
    docs, _ = _lang_docs(4, 717)
    assert _wait_final(api, _submit(api, "doc-lang", docs))["status"] == "succeeded"
    docs_slow, _ = _lang_docs(4, 718)
    assert _wait_final(api, _submit(api, "doc-lang-slow", docs_slow))["status"] == "succeeded"
    # Cap 2: doc-type is pinned, doc-lang-slow was needed, so doc-lang (used longest ago) went.
    wait_for(lambda: _models(api)["doc-lang"]["state"] == "unloaded", 60, "doc-lang unloaded")
    models = _models(api)
    assert models["doc-type"]["state"] == "ready" and models["doc-type"]["pinned"]
    assert models["doc-lang-slow"]["state"] == "ready"
    # A job for the unloaded model simply loads it again.
    assert _wait_final(api, _submit(api, "doc-lang", docs))["status"] == "succeeded"


def test_jobs_for_both_models_run_side_by_side(stack) -> None:  # type: ignore[no-untyped-def]
    api, _, _ = stack
    typed = doc_type_documents(6, 99)
    type_job = _submit(api, "doc-type", [{"id": d.id, "text": d.text} for d in typed])
    lang_docs, _ = _lang_docs(6, 818)
    lang_job = _submit(api, "doc-lang", lang_docs)
    for job_id, labels in ((type_job, set(LABELS)), (lang_job, set(LANGUAGES))):
        assert _wait_final(api, job_id)["status"] == "succeeded"
        results = _results(api, job_id)
        assert len(results) == 6 and {r["label"] for r in results} <= labels


def test_unknown_model_is_refused_and_creates_no_job(stack) -> None:  # type: ignore[no-untyped-def]
    api, _, _ = stack
    resp = api.post("/v1/jobs", json={"model": "nope", "documents": [{"id": "a", "text": "x"}]})
    assert resp.status_code == 422
    error = resp.json()["error"]
    assert error["code"] == "unknown_model"
    assert "doc-lang" in error["detail"]["known"]


def test_new_version_published_while_a_job_runs(stack) -> None:  # type: ignore[no-untyped-def]
    api, settings, repo = stack
    docs, _ = _lang_docs(240, 919)
    job_id = _submit(api, "doc-lang", docs)
    wait_for(
        lambda: api.get(f"/v1/jobs/{job_id}").json()["progress"]["documents_done"] > 0,
        300,
        "first shard done",
    )

    def fill(folder: Path) -> None:  # version 2: the same weights, published atomically
        for f in (repo / "doc-lang" / "1").iterdir():
            (folder / f.name).symlink_to(f.resolve())

    publish_version(repo / "doc-lang", 2, fill)
    client = grpcclient.InferenceServerClient(settings.triton_grpc_url)
    client.load_model("doc-lang")  # what `docq convert --publish --load` does
    status_when_switched = api.get(f"/v1/jobs/{job_id}").json()["status"]
    assert status_when_switched == "running", "the job ended before version 2 was served"

    job = _wait_final(api, job_id)
    assert job["status"] == "succeeded"
    assert job["progress"] == {"documents_done": 240, "documents_failed": 0}
    assert all("label" in r for r in _results(api, job_id))
    assert _models(api)["doc-lang"]["version"] == "2"
    stats = {s.version: s for s in client.get_inference_statistics("doc-lang").model_stats}
    # More than the warm-up request reached version 2: shards after the switch ran on it.
    assert stats["2"].inference_count > 1
    client.close()
