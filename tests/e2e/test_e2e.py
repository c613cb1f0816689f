"""End to end: upload -> real Celery worker -> real tritonserver -> results, in every format."""

from __future__ import annotations

import json
import math

import pytest
from fastapi.testclient import TestClient

from corpus.doc_type import LABELS, generate
from docq.config import REPO_ROOT, Settings
from docq.text.tokenizing import load_tokenizer, tokenize
from docq.text.windowing import WindowSpec, window_count
from tests.support.jobs import all_results, wait_until_final

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def documents() -> list[dict[str, str]]:
    """50 documents of mixed length, some over 2,000 tokens, ids in a scrambled order."""
    corpus = generate(400, seed=2024)
    tok = load_tokenizer(REPO_ROOT / "model_repository" / "doc-type" / "tokenizer")
    lengths = [len(t) for t in tokenize(tok, [d.text for d in corpus])]
    long = [d for d, n in zip(corpus, lengths, strict=True) if n > 2000][:6]
    short = [d for d, n in zip(corpus, lengths, strict=True) if n <= 2000][: 50 - len(long)]
    assert len(long) >= 5, "the corpus must give several documents over 2,000 tokens"
    picked = short[:20] + long + short[20:]
    return [{"id": f"{(i * 37) % 101:03d}-{d.id}", "text": d.text} for i, d in enumerate(picked)]


def upload(api: TestClient, fmt: str, docs: list[dict[str, str]]):
    if fmt == "json":
        return api.post("/v1/jobs", json={"model": "doc-type", "documents": docs})
    if fmt == "ndjson":
        body = "".join(json.dumps(d) + "\n" for d in docs).encode()
        return api.post(
            "/v1/jobs?model=doc-type",
            content=body,
            headers={"content-type": "application/x-ndjson"},
        )
    files = [("files", (d["id"], d["text"].encode())) for d in docs]
    return api.post("/v1/jobs", data={"model": "doc-type"}, files=files)


@pytest.mark.parametrize("fmt", ["json", "ndjson", "multipart"])
def test_bulk_upload_is_classified_in_full_and_in_order(
    api: TestClient, worker: object, settings: Settings, documents: list[dict[str, str]], fmt: str
) -> None:
    resp = upload(api, fmt, documents)
    assert resp.status_code == 202, resp.text
    created = resp.json()
    assert created["status"] == "queued"
    assert (created["model"], created["documents"]) == ("doc-type", 50)

    job, seen = wait_until_final(api, created["id"])
    assert job["status"] == "succeeded", job
    assert job["progress"] == {"documents_done": 50, "documents_failed": 0}
    assert job["started_at"] is not None
    assert job["created_at"] <= job["started_at"] <= job["finished_at"]
    assert seen <= {"queued", "running", "succeeded"}

    results = all_results(api, created["id"])
    assert [r["id"] for r in results] == [d["id"] for d in documents]  # upload order kept

    tok = load_tokenizer(settings.model_repository / "doc-type" / "tokenizer")
    spec = WindowSpec(max_seq_len=512, stride=64, cls_id=tok.cls_token_id, sep_id=tok.sep_token_id)
    token_counts = [len(t) for t in tokenize(tok, [d["text"] for d in documents])]
    for result, n_tokens in zip(results, token_counts, strict=True):
        assert result["label"] in LABELS
        assert set(result["scores"]) == set(LABELS)
        assert math.isclose(sum(result["scores"].values()), 1.0, abs_tol=1e-6)
        assert result["label"] == max(result["scores"], key=result["scores"].get)
        assert result["windows"] == window_count(n_tokens, spec)
    assert max(r["windows"] for r in results) >= 5  # the long documents were read in full

    streamed = api.get(
        f"/v1/jobs/{created['id']}/results", headers={"accept": "application/x-ndjson"}
    )
    assert streamed.headers["content-type"].startswith("application/x-ndjson")
    assert [json.loads(line) for line in streamed.text.splitlines()] == results


def test_the_demo_model_classifies_documents_correctly(api: TestClient, worker: object) -> None:
    labelled = generate(24, seed=99)
    resp = upload(api, "json", [{"id": d.id, "text": d.text} for d in labelled])
    job, _ = wait_until_final(api, resp.json()["id"])
    results = all_results(api, job["id"], limit=100)
    correct = sum(r["label"] == d.label for r, d in zip(results, labelled, strict=True))
    assert correct >= 22, f"{correct}/24 correct"


def test_models_lists_the_demo_model(api: TestClient) -> None:
    models = api.get("/v1/models").json()
    (doc_type,) = [m for m in models["data"] if m["name"] == "doc-type"]
    assert doc_type["state"] == "ready"
    assert doc_type["labels"] == list(LABELS)
    assert doc_type["max_seq_len"] == 512
    assert doc_type["runtime"] == "onnx-cpu"


def test_health_and_readiness(api: TestClient) -> None:
    assert api.get("/healthz").json() == {"status": "ok"}
    ready = api.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["checks"] == {"redis": True, "triton": True, "store_memory": True}
    assert b"docq_jobs_created_total" in api.get("/metrics/").content


def test_python_client_round_trip(api: TestClient, worker: object) -> None:
    from client.sdk import DocqAPIError, DocqClient

    client = DocqClient(http=api)
    labelled = generate(6, seed=5)
    created = client.submit([{"id": d.id, "text": d.text} for d in labelled])
    assert created["model"] == "doc-type"  # the configured default
    job = client.wait(created["id"], poll_s=0.1, timeout_s=300)
    assert job["status"] == "succeeded"
    assert [r["id"] for r in client.results(created["id"], page=4)] == [d.id for d in labelled]
    with pytest.raises(DocqAPIError) as err:
        client.job("missing")
    assert err.value.status == 404
