"""A model that refuses one document's input: that document gets an error, every other
document of the 600 is classified as in a fault-free run, and the job says how many failed.

The refusal is a real one, from the served runtime: the model's tokenizer is given one
token more than the model's vocabulary (a tokenizer that does not match its model, as a
bad conversion leaves), so a document holding that token sends an id the ONNX graph's
embedding cannot look up. ONNX Runtime refuses the batch, the runtime answers
INVALID_ARGUMENT (not INTERNAL, which workers would retry for the whole retry budget), the
worker sends the batch's windows again one by one, and only that document's windows fail.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from corpus.doc_type import generate
from devstack.services import celery_worker, redis_server, triton_server
from docq.config import Settings
from docq.store import JobStore
from docq.text.tokenizing import load_tokenizer
from tests.conftest import link_model, settings_env, tenant_headers
from tests.support.jobs import all_results, wait_until_final

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

DOCUMENTS = 600
REFUSED = {17, 300, 599}  # positions of the documents holding the token the model lacks
BEYOND = "[BEYOND-VOCAB]"


def repository_with_a_mismatched_tokenizer(root: Path) -> Path:
    """doc-type, its tokenizer given one token past the end of the model's embedding."""
    model = link_model(root, "doc-type")
    source = (model / "tokenizer").resolve()
    (model / "tokenizer").unlink()
    tokenizer = load_tokenizer(source)
    vocab = tokenizer.vocab_size
    tokenizer.add_tokens([BEYOND])
    tokenizer.save_pretrained(str(model / "tokenizer"))
    assert load_tokenizer(model / "tokenizer").convert_tokens_to_ids(BEYOND) == vocab
    return root


@pytest.mark.timeout(1200)
def test_a_document_the_model_refuses_fails_alone(tmp_path: Path) -> None:
    from api.main import create_app

    repository = repository_with_a_mismatched_tokenizer(tmp_path / "repo")
    docs = [{"id": d.id, "text": d.text[:300]} for d in generate(DOCUMENTS, seed=91)]
    refused = [
        {**d, "text": f"{d['text'][:150]} {BEYOND} {d['text'][150:]}"} if i in REFUSED else d
        for i, d in enumerate(docs)
    ]
    with (
        redis_server(tmp_path / "redis") as redis_url,
        triton_server(repository, tmp_path / "triton.log") as triton_url,
    ):
        s = Settings(
            redis_url=redis_url,
            triton_grpc_url=triton_url,
            model_repository=repository,
            shard_size=8,
            task_retry_backoff_s=1,
        )
        store = JobStore.from_url(redis_url, shard_size=s.shard_size, ttl_s=3600)
        with (
            TestClient(create_app(s), headers=tenant_headers(s)) as api,
            celery_worker(settings_env(s), tmp_path / "worker.log", "cpu", concurrency=4),
        ):
            reference = api.post("/v1/jobs", json={"documents": docs}).json()
            ref, _ = wait_until_final(api, reference["id"], timeout=600)
            assert ref["progress"] == {"documents_done": DOCUMENTS, "documents_failed": 0}

            created = api.post("/v1/jobs", json={"documents": refused}).json()
            job, _ = wait_until_final(api, created["id"], timeout=600)
            assert job["status"] == "succeeded"  # some documents were classified
            assert job["progress"] == {
                "documents_done": DOCUMENTS,
                "documents_failed": len(REFUSED),
            }
            results = all_results(api, created["id"], limit=200)
            expected = all_results(api, reference["id"], limit=200)
            for i, (got, want) in enumerate(zip(results, expected, strict=True)):
                assert got["id"] == want["id"]
                if i in REFUSED:
                    assert "label" not in got
                    assert got["error"], got
                else:
                    assert got["label"] == want["label"], got
            assert store.answers(created["id"]) == dict.fromkeys(range(DOCUMENTS), 1)
