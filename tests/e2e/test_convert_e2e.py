"""A RoBERTa checkpoint with its own tokenizer, converted and served end to end (issue 40):
`docq convert --publish` -> real tritonserver -> API -> real Celery worker, a job of
English and Japanese documents, each answered with the label transformers gives in-process
over the same windows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import transformers as tf
from fastapi.testclient import TestClient

from devstack.services import celery_worker, free_port, redis_server, triton_server, wait_for
from docq.config import Settings
from docq.jobs import JobStatus
from docq.text.aggregation import aggregate
from docq.text.packing import pad
from docq.text.tokenizing import load_tokenizer, window_spec
from docq.text.tokens import windows_of
from tests.conftest import settings_env, tenant_headers
from tests.support.checkpoints import ENGLISH, JAPANESE, LABELS, make_checkpoint

pytestmark = [pytest.mark.e2e, pytest.mark.build]

NAME = "my-roberta"
DOCS = [text for text, _ in ENGLISH + JAPANESE] + ["。", "請求書 " * 40]  # short; many windows


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Path]]:
    from typer.testing import CliRunner

    from client.cli import app

    root = tmp_path_factory.mktemp("convert-e2e")
    checkpoint = make_checkpoint(root / "checkpoint", "Roberta")
    documents = root / "docs.ndjson"
    documents.write_text(
        "".join(
            json.dumps({"id": str(i), "text": t, "label": label}, ensure_ascii=False) + "\n"
            for i, (t, label) in enumerate(ENGLISH + JAPANESE)
        ),
        encoding="utf-8",
    )
    repo = root / "repo"
    args = ["convert", str(checkpoint), "--name", NAME, "--repository", str(repo)]
    args += ["--workdir", str(root / "work"), "--documents", str(documents)]
    args += ["--max-seq-len", "16", "--stride", "4", "--publish"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    base = Settings(
        model_repository=repo,
        model_control="explicit",
        model_startup=NAME,
        model_pinned=NAME,
        shard_size=4,
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
                settings_env(settings), root / "worker.log", "cpu,cpu-priority", concurrency=1
            ),
            TestClient(create_app(settings), headers=tenant_headers(settings)) as api,
        ):
            yield api, checkpoint


def _expected(checkpoint: Path) -> list[str]:
    """Labels transformers gives in-process over the windows docq cuts (mean of logits)."""
    tok = load_tokenizer(checkpoint)
    model = tf.AutoModelForSequenceClassification.from_pretrained(str(checkpoint)).eval()
    labels = []
    for windows in windows_of(tok, DOCS, window_spec(tok, 16, 4)):
        ids, mask = pad(windows, tok.pad_token_id)
        with torch.inference_mode():
            logits = model(
                input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask)
            ).logits.numpy()
        labels.append(aggregate(np.asarray(logits), [w.length for w in windows], LABELS).label)
    return labels


def test_a_converted_roberta_serves_a_job_with_transformers_labels(
    served: tuple[TestClient, Path],
) -> None:
    api, checkpoint = served
    docs = [{"id": str(i), "text": t} for i, t in enumerate(DOCS)]
    resp = api.post("/v1/jobs", json={"model": NAME, "documents": docs})
    assert resp.status_code == 202, resp.text
    job_id = resp.json()["id"]
    holder: dict[str, Any] = {}

    def final() -> bool:
        holder["job"] = api.get(f"/v1/jobs/{job_id}").json()
        return JobStatus(holder["job"]["status"]).final

    wait_for(final, 300, f"job {job_id}")
    assert holder["job"]["status"] == "succeeded", holder["job"]
    body = api.get(f"/v1/jobs/{job_id}/results", headers={"accept": "application/x-ndjson"})
    results = [json.loads(line) for line in body.text.splitlines() if line]
    assert [r["id"] for r in results] == [d["id"] for d in docs]
    assert [r["label"] for r in results] == _expected(checkpoint)
    assert results[-1]["windows"] > 1
