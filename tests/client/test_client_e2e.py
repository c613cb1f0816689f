"""The client and the CLI against the real API, with a real worker, Redis and tritonserver."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from client import cli, errors
from client.cli import ExitCode, app
from client.documents import Limits, from_paths
from client.sdk import DocqClient
from corpus.doc_type import LABELS
from devstack.services import api_server
from devstack.stack import REPO
from docq.config import Settings
from tests.conftest import settings_env, tenant_headers

pytestmark = pytest.mark.e2e

SAMPLES = sorted((REPO / "samples").glob("*.txt"))


@pytest.fixture
def through_api(api: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's client speaks to the app in process (the `api` fixture's TestClient)."""

    def client(url: str, api_key: str | None, limits: Limits | None = None) -> DocqClient:
        return DocqClient(url, api_key=api_key, limits=limits, http=api)

    monkeypatch.setattr(cli, "_client", client)


def test_a_split_upload_comes_back_whole_and_in_order(api: TestClient, worker: object) -> None:
    client = DocqClient(http=api, limits=Limits(max_documents=5))
    submission = client.submit_many(from_paths(SAMPLES), "doc-type")
    assert len(submission.ids) == 3 and submission.documents == len(SAMPLES)
    seen = []
    jobs = client.wait_all(submission.ids, poll_s=0.2, timeout_s=300, on_progress=seen.append)
    assert {j["status"] for j in jobs} == {"succeeded"}
    assert seen[-1].done == len(SAMPLES) and seen[-1].finished
    assert [p.done for p in seen] == sorted(p.done for p in seen)
    results = list(client.results_all(submission.ids, page=2))
    assert [r["id"] for r in results] == [p.name for p in SAMPLES]
    assert all(r["label"] in LABELS for r in results)


def test_cli_submit_wait_writes_every_result(
    through_api: None, worker: object, tmp_path: Path
) -> None:
    out = tmp_path / "results.jsonl"
    args = ["submit", *map(str, SAMPLES), "--model", "doc-type", "--wait", "-o", str(out)]
    result = CliRunner().invoke(app, [*args, "--max-documents", "7", "--poll", "0.2"])
    assert result.exit_code == ExitCode.OK, result.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in lines] == [p.name for p in SAMPLES]
    assert all(set(r["scores"]) == set(LABELS) for r in lines)
    assert f"{len(SAMPLES)}/{len(SAMPLES)}" in result.stderr


def test_cli_status_results_cancel_models(
    through_api: None, worker: object, tmp_path: Path
) -> None:
    runner = CliRunner()
    job_id = runner.invoke(app, ["submit", str(SAMPLES[0])]).stdout.strip()
    status = json.loads(runner.invoke(app, ["status", job_id]).stdout)
    assert status["id"] == job_id and status["documents"] == 1
    cancelled = json.loads(runner.invoke(app, ["cancel", job_id]).stdout)
    assert cancelled["status"] in ("cancelled", "succeeded")  # it may have finished first
    out = tmp_path / "out.jsonl"
    assert runner.invoke(app, ["results", job_id, "-o", str(out)]).exit_code == 0
    models = runner.invoke(app, ["models"])
    assert models.exit_code == 0 and "doc-type" in models.stdout


def test_cli_refused_upload_names_the_servers_reason(through_api: None) -> None:
    result = CliRunner().invoke(app, ["submit", str(SAMPLES[0]), "--model", "no-such-model"])
    assert result.exit_code == ExitCode.REFUSED
    assert result.stderr.startswith("docq: refused (422 ")
    assert "no-such-model" in result.stderr
    missing = CliRunner().invoke(app, ["status", "no-such-job"])
    assert missing.exit_code == ExitCode.REFUSED and "not found" in missing.stderr


def test_an_unknown_job_raises_not_found(api: TestClient) -> None:
    with pytest.raises(errors.NotFound):
        DocqClient(http=api).job("no-such-job")


def test_a_bad_key_is_refused_with_exit_4(api: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(errors.Unauthorized) as refused:
        DocqClient(http=api, api_key="not-a-key").models()
    assert refused.value.status == 401

    def client(url: str, api_key: str | None, limits: Limits | None = None) -> DocqClient:
        return DocqClient(url, api_key=api_key, limits=limits, http=api)

    monkeypatch.setattr(cli, "_client", client)
    result = CliRunner().invoke(app, ["models", "--api-key", "not-a-key"])
    assert result.exit_code == ExitCode.UNAUTHORIZED
    assert result.stderr.startswith("docq: the server refused the API key (")
    assert refused.value.message in result.stderr  # the server's own words


@pytest.fixture(scope="module")
def api_url(settings: Settings, service_dir: Path) -> Iterator[str]:
    """The API as its own process, as `make up` runs it: the CLI speaks real HTTP to it."""
    with api_server(settings_env(settings), service_dir / "client-api.log") as url:
        yield url


def test_cli_over_http_with_a_key_from_the_environment(
    api_url: str, settings: Settings, worker: object, tmp_path: Path
) -> None:
    key = tenant_headers(settings)["Authorization"].removeprefix("Bearer ")
    out = tmp_path / "results.jsonl"
    result = CliRunner().invoke(
        app,
        ["submit", str(SAMPLES[0]), str(SAMPLES[1]), "--wait", "-o", str(out), "--poll", "0.2"],
        env={"DOCQ_URL": api_url, "DOCQ_API_KEY": key},
    )
    assert result.exit_code == ExitCode.OK, result.output
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == [
        SAMPLES[0].name,
        SAMPLES[1].name,
    ]
    no_key = CliRunner().invoke(app, ["models", "--url", api_url], env={"DOCQ_API_KEY": ""})
    assert no_key.exit_code == ExitCode.UNAUTHORIZED


def test_submit_prints_the_documents_accepted_as_failed_and_reject_lists_them_all(
    through_api: None, worker: object, extract_worker: object, tmp_path: Path
) -> None:
    from tests.files import INVOICE, pdf

    (tmp_path / "invoice.pdf").write_bytes(pdf(INVOICE))
    (tmp_path / "empty.pdf").write_bytes(b"")
    (tmp_path / "latin1.txt").write_bytes("caf\u00e9 cr\u00e8me".encode("latin-1"))
    (tmp_path / "lease.txt").write_text("Lease agreement for the flat at 3 Elm Road")
    paths = [str(p) for p in sorted(tmp_path.iterdir())]

    refused = CliRunner().invoke(app, ["submit", *paths, "--on-invalid", "reject"])
    assert refused.exit_code == ExitCode.REFUSED, refused.output
    assert "2 document(s) invalid (nothing was created)" in refused.stderr
    assert "invalid_documents" in refused.stderr

    out = tmp_path / "results.jsonl"
    result = CliRunner().invoke(app, ["submit", *paths, "--wait", "--poll", "0.2", "-o", str(out)])
    assert result.exit_code == ExitCode.OK, result.output
    assert "2 document(s) accepted as failed:" in result.stderr
    assert "  empty.pdf: empty: the file is empty (0 bytes)" in result.stderr
    assert "  latin1.txt: not_utf8: " in result.stderr
    results = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert {k: r.get("error_code") for k, r in results.items()} == {
        "empty.pdf": "empty",
        "invoice.pdf": None,
        "latin1.txt": "not_utf8",
        "lease.txt": None,
    }
    assert "label" in results["invoice.pdf"] and "label" in results["lease.txt"]
