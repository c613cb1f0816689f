"""client/cli.py through typer's CliRunner: output, files written and exit codes, against a fake
server at the httpx edge (MockTransport) and, for an unreachable server, no server at all."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from client import cli
from client.cli import ExitCode, app
from client.documents import Limits
from client.sdk import DocqClient
from devstack.services import free_port


class Server:
    """A docq API in miniature: jobs finish on the second poll; records the requests."""

    def __init__(self, error: tuple[int, dict] | None = None, final: str = "succeeded") -> None:
        self.error = error
        self.final = final
        self.requests: list[httpx.Request] = []
        self.jobs: dict[str, list[dict[str, str]]] = {}
        self.polls: dict[str, int] = {}

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.error is not None:
            code, body = self.error
            return httpx.Response(code, json=body)
        path = request.url.path
        if request.method == "POST" and path == "/v1/jobs":
            job_id = f"job-{len(self.jobs)}"
            self.jobs[job_id] = [json.loads(line) for line in request.content.splitlines()]
            n = len(self.jobs[job_id])
            return httpx.Response(202, json={"id": job_id, "status": "queued", "documents": n})
        if path == "/v1/models":
            model = {"name": "doc-type", "version": "1", "state": "ready", "pinned": True}
            return httpx.Response(
                200, json={"data": [{**model, "labels": ["invoice"], "max_seq_len": 512}]}
            )
        job_id = path.split("/")[3]
        docs = self.jobs[job_id]
        if path.endswith("/results"):
            data = [{"id": d["id"], "label": "invoice"} for d in docs]
            return httpx.Response(200, json={"data": data, "next_cursor": None})
        self.polls[job_id] = self.polls.get(job_id, 0) + 1
        final = self.polls[job_id] >= 2 or request.method == "DELETE"
        state = ("cancelled" if request.method == "DELETE" else self.final) if final else "running"
        done = len(docs) if final else len(docs) // 2
        return httpx.Response(
            200,
            json={
                "id": job_id,
                "status": state,
                "documents": len(docs),
                "progress": {"documents_done": done, "documents_failed": 0},
            },
        )


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Server:
    fake = Server()

    def client(url: str, api_key: str | None, limits: Limits | None = None) -> DocqClient:
        return DocqClient(url, api_key=api_key, limits=limits, transport=httpx.MockTransport(fake))

    monkeypatch.setattr(cli, "_client", client)
    return fake


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    paths = []
    for i in range(3):
        path = tmp_path / f"doc-{i}.txt"
        path.write_text(f"INVOICE {i}", encoding="utf-8")
        paths.append(path)
    ndjson = tmp_path / "more.ndjson"
    ndjson.write_text("".join(json.dumps({"id": f"n{i}", "text": "t"}) + "\n" for i in range(4)))
    return [*paths, ndjson]


def run(*args: str, env: dict[str, str] | None = None) -> object:
    return CliRunner().invoke(app, list(args), env=env)


def test_submit_prints_one_job_id_per_line(server: Server, files: list[Path]) -> None:
    result = run("submit", *map(str, files), "--model", "doc-type")
    assert result.exit_code == ExitCode.OK, result.output
    assert result.stdout.split() == ["job-0"]
    assert [d["id"] for d in server.jobs["job-0"]] == ["doc-0.txt", "doc-1.txt", "doc-2.txt"] + [
        f"n{i}" for i in range(4)
    ]
    assert server.requests[0].url.params["model"] == "doc-type"


def test_submit_wait_writes_one_json_line_per_document_across_split_jobs(
    server: Server, files: list[Path], tmp_path: Path
) -> None:
    out = tmp_path / "results.jsonl"
    result = run(
        "submit", *map(str, files), "--wait", "-o", str(out), "--max-documents", "3", "--poll", "0"
    )
    assert result.exit_code == ExitCode.OK, result.output
    assert sorted(server.jobs) == ["job-0", "job-1", "job-2"]  # 7 documents, 3 per job
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in lines] == ["doc-0.txt", "doc-1.txt", "doc-2.txt"] + [
        f"n{i}" for i in range(4)
    ]
    assert "7/7" in result.stderr  # the progress bar's last state: documents done of all
    assert "wrote 7 results" in result.stderr


def test_a_job_that_did_not_succeed_exits_1(server: Server, files: list[Path]) -> None:
    server.final = "failed"
    result = run("submit", str(files[0]), "--wait", "--poll", "0")
    assert result.exit_code == ExitCode.JOB_NOT_SUCCEEDED
    assert "job-0 failed" in result.stderr
    assert json.loads(result.stdout)["id"] == "doc-0.txt"  # its results are still written


def test_submit_manifest_names_objects_or_a_prefix_never_both(server: Server) -> None:
    result = run("submit-manifest", "b7/a.ndjson", "b7/scan.pdf", "--results", "b7/out/")
    assert result.exit_code == ExitCode.OK, result.output
    assert result.stdout.split() == ["job-0"]
    assert server.jobs["job-0"] == [
        {"manifest": {"objects": ["b7/a.ndjson", "b7/scan.pdf"]}, "results": "b7/out/"}
    ]
    assert run("submit-manifest", "--prefix", "b7/").exit_code == ExitCode.OK
    assert server.jobs["job-1"] == [{"manifest": {"prefix": "b7/"}}]
    for both_or_neither in (("b7/a.ndjson", "--prefix", "b7/"), ()):
        result = run("submit-manifest", *both_or_neither)
        assert result.exit_code == ExitCode.USAGE
        assert "name objects or --prefix, not both" in result.stderr
    assert len(server.requests) == 2  # a usage error sends nothing


def test_url_and_key_come_from_the_environment_or_the_options(
    server: Server, files: list[Path]
) -> None:
    run("status", "job-x", env={"DOCQ_URL": "http://docq.example:9", "DOCQ_API_KEY": "env-key"})
    run("status", "job-x", "--url", "http://other:1", "--api-key", "opt-key")
    assert str(server.requests[0].url).startswith("http://docq.example:9/v1/jobs/job-x")
    assert server.requests[0].headers["authorization"] == "Bearer env-key"
    assert server.requests[1].headers["authorization"] == "Bearer opt-key"


def test_status_results_cancel_and_models(
    server: Server, files: list[Path], tmp_path: Path
) -> None:
    job_id = run("submit", str(files[3])).stdout.strip()
    running = run("status", job_id)
    assert running.exit_code == 0 and json.loads(running.stdout)["status"] == "running"
    out = tmp_path / "out.jsonl"
    assert run("results", job_id, "-o", str(out)).exit_code == 0
    assert len(out.read_text().splitlines()) == 4
    cancelled = run("cancel", job_id)
    assert json.loads(cancelled.stdout)["status"] == "cancelled"
    assert server.requests[-1].method == "DELETE"
    models = run("models")
    assert models.exit_code == 0 and "doc-type" in models.stdout and "pinned" in models.stdout


@pytest.mark.parametrize(
    ("code", "body", "exit_code", "message"),
    [
        (
            401,
            {"error": {"code": "unauthorized", "message": "invalid API key"}},
            ExitCode.UNAUTHORIZED,
            "the server refused the API key (invalid API key)",
        ),
        (
            422,
            {"error": {"code": "unknown_model", "message": "no model named 'nope'"}},
            ExitCode.REFUSED,
            "refused (422 unknown_model): no model named 'nope'",
        ),
        (
            413,
            {"error": {"code": "payload_too_large", "message": "body larger than 10 bytes"}},
            ExitCode.REFUSED,
            "refused (413 payload_too_large): body larger than 10 bytes",
        ),
        (
            503,
            {"error": {"code": "triton_unavailable", "message": "Triton is down"}},
            ExitCode.SERVER_ERROR,
            "server error (503 triton_unavailable): Triton is down",
        ),
    ],
)
def test_refusals_are_one_line_with_the_servers_message_and_their_exit_code(
    server: Server, files: list[Path], code: int, body: dict, exit_code: int, message: str
) -> None:
    server.error = (code, body)
    result = run("submit", str(files[0]), "--model", "nope")
    assert result.exit_code == exit_code
    assert result.stderr.strip() == f"docq: {message}" + (
        "; give a valid one with --api-key or DOCQ_API_KEY" if code == 401 else ""
    )
    assert result.stdout == ""


def test_an_unknown_job_is_refused(server: Server) -> None:
    server.error = (404, {"error": {"code": "not_found", "message": "no job 'nope'"}})
    result = run("status", "nope")
    assert result.exit_code == ExitCode.REFUSED
    assert result.stderr.strip() == "docq: not found: no job 'nope'"


def test_an_unreachable_server_is_one_line_and_exit_3(files: list[Path]) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    result = run("submit", str(files[0]), "--url", url)
    assert result.exit_code == ExitCode.UNREACHABLE
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"docq: cannot reach {url}")


def test_a_bad_ndjson_file_is_a_usage_error(server: Server, tmp_path: Path) -> None:
    bad = tmp_path / "bad.ndjson"
    bad.write_text('{"id": "a", "text": "x"}\n{oops\n')
    result = run("submit", str(bad))
    assert result.exit_code == ExitCode.USAGE
    assert "bad.ndjson, line 2: not JSON" in result.stderr
    assert server.requests == []


def test_the_model_toolchain_commands_are_still_there() -> None:
    result = run("--help")
    for command in (
        "submit",
        "status",
        "results",
        "cancel",
        "models",
        "convert",
        "validate",
        "keys",
    ):
        assert command in result.stdout
