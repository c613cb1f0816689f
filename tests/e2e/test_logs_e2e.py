"""Nothing secret in the logs (issue 22, part 4): a job with an API key and a webhook secret,
run through the API process, a shard worker and the webhooks worker at DEBUG in JSON, leaves
neither, nor any document's text, in any process's log.

A Redis of its own makes every line of these logs this job's (and its processes' start and
stop); the tritonserver is the session's (it sees token ids, never text), its log read too.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from corpus.doc_type import generate
from devstack.services import api_server, celery_worker, redis_server
from docq.config import Settings
from docq.jobs import JobStatus
from tests.conftest import settings_env, tenant_headers
from tests.support.polling import until
from tests.support.receiver import Receiver

pytestmark = pytest.mark.e2e

WORDS = 5  # every run of this many words of a document is looked for in the logs


@pytest.fixture
def own_settings(tmp_path: Path, settings: Settings) -> Iterator[Settings]:
    with redis_server(tmp_path / "redis") as redis_url:
        yield settings.model_copy(
            update={"redis_url": redis_url, "log_format": "json", "log_level": "DEBUG"}
        )


def documents(marker: str, n: int = 4) -> list[dict[str, str]]:
    """`n` documents, each carrying the marker (and its own number) first, mid-text and last."""
    docs = []
    for i, d in enumerate(generate(n, seed=22)):
        words = d.text.split()
        half = len(words) // 2
        tag = f"{marker}-{i}"
        text = " ".join([tag, *words[:half], tag, *words[half:], tag])
        docs.append({"id": f"logs-{i}", "text": text})
    return docs


def excerpts(text: str) -> set[str]:
    """Every run of WORDS plain words of a text: what a log line quoting it would hold."""
    words = text.split()
    runs = {" ".join(words[i : i + WORDS]) for i in range(len(words) - WORDS + 1)}
    return {run for run in runs if re.fullmatch(r"[A-Za-z0-9 -]+", run)}


def forbidden(api_key: str, secret: str, docs: list[dict[str, str]], marker: str) -> set[str]:
    """Every string no log may hold: the key (and its secret part), the webhook secret in
    each form it travels (whsec_..., its base64 body, the raw key as hex), the texts."""
    body = secret.removeprefix("whsec_")
    raw = base64.b64decode(body)
    found = {api_key, api_key.rsplit("_", 1)[1], secret, body, body.rstrip("="), raw.hex()}
    found.add(base64.urlsafe_b64encode(raw).decode().rstrip("="))
    found.add(marker)
    for doc in docs:
        found |= {doc["text"], *excerpts(doc["text"])}
    return found


def json_lines(text: str) -> list[dict[str, Any]]:
    """The log's JSON lines (a Celery worker also prints its plain start-up banner)."""
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def final(api: httpx.Client, job_id: str) -> dict[str, Any] | None:
    job: dict[str, Any] = api.get(f"/v1/jobs/{job_id}").json()
    return job if JobStatus(job["status"]).final else None


def delivered(api: httpx.Client, job_id: str) -> dict[str, Any] | None:
    hook: dict[str, Any] = api.get(f"/v1/jobs/{job_id}/webhook").json()
    return hook if hook["state"] == "delivered" else None


def test_no_log_holds_the_api_key_the_webhook_secret_or_any_text(
    own_settings: Settings, tmp_path: Path, service_dir: Path
) -> None:
    env = settings_env(own_settings)
    assert env["DOCQ_LOG_LEVEL"] == "DEBUG" and env["DOCQ_LOG_FORMAT"] == "json"
    marker = f"logmarker{uuid.uuid4().hex}"
    docs = documents(marker)
    secret = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    headers = tenant_headers(own_settings)
    api_key = headers["Authorization"].removeprefix("Bearer ")
    logs = {
        "api": tmp_path / "api.log",
        "worker": tmp_path / "worker.log",
        "webhooks": tmp_path / "webhooks.log",
    }
    hooks_env = {**env, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "multiproc")}
    receiver = Receiver(503, 200)  # one retry: the secret signs twice
    with (
        receiver.serve() as hook_url,
        celery_worker(env, logs["worker"], "cpu,cpu-priority", "logs", concurrency=2),
        celery_worker(hooks_env, logs["webhooks"], "webhooks", "logs-hooks", pool="prefork"),
        api_server(env, logs["api"]) as url,
        httpx.Client(base_url=url, headers=headers, timeout=30) as api,
    ):
        webhook = {"url": hook_url, "secret": secret}
        created = api.post("/v1/jobs", json={"documents": docs, "webhook": webhook})
        assert created.status_code == 202, created.text
        job_id = created.json()["id"]
        job = until(lambda: final(api, job_id), "the job to be final", timeout=300)
        assert job["status"] == "succeeded", job
        hook = until(lambda: delivered(api, job_id), "the webhook's delivery", timeout=120)
        assert [a["status_code"] for a in hook["attempts"]] == [503, 200]
        results = api.get(f"/v1/jobs/{job_id}/results", params={"limit": 100}).json()
        assert len(results["data"]) == len(docs)
    assert len(receiver.accepted) == 1

    # not vacuous: every process logged, at DEBUG, in JSON, and about this job
    for name, path in logs.items():
        lines = json_lines(path.read_text())
        assert lines, f"{name} logged nothing in JSON"
        assert any(line["level"] == "DEBUG" for line in lines), f"{name} has no DEBUG line"
    for name in ("api", "worker"):
        assert any(line.get("job_id") == job_id for line in json_lines(logs[name].read_text()))

    looked_for = forbidden(api_key, secret, docs, marker)
    assert len(looked_for) > 20  # the texts' excerpts are there to find
    for name, path in {**logs, "triton": service_dir / "triton.log"}.items():
        text = path.read_text(errors="replace")
        # JSON escapes quotes and non-ASCII: look in the decoded messages too
        decoded = "\n".join(str(v) for line in json_lines(text) for v in line.values())
        leaked = sorted(s for s in looked_for if s in text or s in decoded)
        assert not leaked, f"{name}'s log ({path}) holds {leaked[:5]}"
