"""`docq`: submit documents, follow jobs and read results from the command line.

    docq submit samples/*.txt --model doc-type --wait -o results.jsonl
    docq status ID | docq results ID -o out.jsonl | docq cancel ID | docq models
    docq submit-manifest batch-7/a.ndjson batch-7/scan.pdf --results batch-7/out/

The server and the key come from `--url` / `--api-key`, or else from `DOCQ_URL` /
`DOCQ_API_KEY`, read by typer as part of parsing the options (`envvar=`), like any
option's default. Output meant for scripts (job ids, JSON, JSON lines) goes to stdout;
progress and messages go to stderr.

Exit codes (ExitCode), for scripts:

    0  done; with --wait, every job succeeded
    1  with --wait: a job ended failed or cancelled (its results are still written)
    2  usage: a bad option or argument, an unreadable input file
    3  the server could not be reached (refused, unresolved, timed out)
    4  the server refused the API key (401)
    5  the server refused the request (another 4xx: invalid or too large upload, unknown
       model or job); the server's message is printed
    6  the server failed (5xx: Redis, the broker or Triton unavailable); try again later
    7  --timeout passed before the jobs were final
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import IntEnum
from importlib.util import find_spec
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from client import errors
from client.documents import Limits, from_paths
from client.manifests import submit_manifest as submit_objects
from client.models import JobStatus, OnInvalid
from client.output import console, print_failed, progress_bar, write_results
from client.sdk import DEFAULT_URL, DocqClient, Submission
from client.sdk import Progress as JobsProgress


class ExitCode(IntEnum):
    """What `docq` exits with; the module docstring says when."""

    OK = 0
    JOB_NOT_SUCCEEDED = 1
    USAGE = 2
    UNREACHABLE = 3
    UNAUTHORIZED = 4
    REFUSED = 5
    SERVER_ERROR = 6
    TIMEOUT = 7


app = typer.Typer(
    help="docq: bulk document classification in front of Triton.",
    epilog="Exit codes: 0 ok, 1 a job failed or was cancelled, 2 usage, 3 server unreachable, "
    "4 API key refused, 5 request refused, 6 server error, 7 wait timed out.",
    no_args_is_help=True,
)

Url = Annotated[
    str, typer.Option("--url", envvar="DOCQ_URL", help="API base URL.", show_envvar=True)
]
ApiKey = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        envvar="DOCQ_API_KEY",
        help="API key, sent as `Authorization: Bearer <key>`.",
        show_default=False,
        show_envvar=True,
    ),
]
Output = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="Write results here as JSON lines (default: stdout)."),
]


def _fail(code: ExitCode, message: str) -> typer.Exit:
    console.print(f"docq: {message}", style="red", markup=False, highlight=False, soft_wrap=True)
    return typer.Exit(code)


@contextmanager
def _errors() -> Iterator[None]:
    """Turn the client's errors into one line on stderr and the exit code scripts expect."""
    try:
        yield
    except errors.Unreachable as exc:
        raise _fail(ExitCode.UNREACHABLE, str(exc)) from None
    except errors.Unauthorized as exc:
        raise _fail(
            ExitCode.UNAUTHORIZED,
            f"the server refused the API key ({exc.message or exc.code}); "
            "give a valid one with --api-key or DOCQ_API_KEY",
        ) from None
    except errors.Refused as exc:
        if exc.code == "invalid_documents" and isinstance(exc.detail, dict):
            print_failed(exc.detail.get("errors", []), "invalid (nothing was created)")
        raise _fail(ExitCode.REFUSED, f"refused ({exc.status} {exc.code}): {exc.message}") from None
    except errors.NotFound as exc:
        raise _fail(ExitCode.REFUSED, f"not found: {exc.message}") from None
    except errors.ServerError as exc:
        raise _fail(
            ExitCode.SERVER_ERROR, f"server error ({exc.status} {exc.code}): {exc.message}"
        ) from None
    except errors.WaitTimeout as exc:
        raise _fail(ExitCode.TIMEOUT, f"gave up waiting: {exc}") from None
    except (OSError, ValueError, UnicodeDecodeError) as exc:  # reading the input files
        raise _fail(ExitCode.USAGE, str(exc)) from None


def _client(url: str, api_key: str | None, limits: Limits | None = None) -> DocqClient:
    """The one place the commands get their client (tests replace it)."""
    return DocqClient(url, api_key=api_key, limits=limits)


@app.command()
def submit(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Files, one document each (id = file name: text, or PDF, PNG, JPEG, TIFF, "
            'DOCX, HTML sent as files), or .ndjson/.jsonl files (one {"id", "text"} per line).',
            exists=True,
            dir_okay=False,
            readable=True,
        ),
    ],
    model: Annotated[str | None, typer.Option(help="Model (default: the API's default).")] = None,
    wait: Annotated[
        bool, typer.Option("--wait", help="Show progress until done, then write the results.")
    ] = False,
    output: Output = None,
    webhook_url: Annotated[
        str | None, typer.Option(help="Webhook called when each job ends.")
    ] = None,
    max_documents: Annotated[
        int, typer.Option(help="Most documents per job; more become several jobs.", min=1)
    ] = Limits.max_documents,
    max_bytes: Annotated[
        int, typer.Option(help="Largest upload body; larger uploads become several jobs.", min=1)
    ] = Limits.max_bytes,
    timeout: Annotated[
        float | None, typer.Option(help="With --wait: give up after this many seconds.")
    ] = None,
    poll: Annotated[float, typer.Option(help="With --wait: seconds between polls.")] = 0.5,
    on_invalid: Annotated[
        OnInvalid,
        typer.Option(
            help="accept: a bad file becomes a failed document and the rest runs; "
            "reject: nothing is created if any file is bad (all of them listed)."
        ),
    ] = OnInvalid.ACCEPT,
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
) -> None:
    """Upload documents (as several jobs when they pass the server's limits)."""
    submission = Submission()
    with _errors(), _client(url, api_key, Limits(max_documents, max_bytes)) as client:
        try:
            client.submit_many(
                from_paths(paths),
                model,
                webhook_url=webhook_url,
                on_invalid=on_invalid.value,
                into=submission,
            )
        finally:
            if submission.jobs:
                console.print(
                    f"submitted {submission.documents} documents as {len(submission.jobs)} "
                    f"job(s): {', '.join(submission.ids)}",
                    highlight=False,
                )
                print_failed(submission.failed, "accepted as failed")
        if not wait:
            for job_id in submission.ids:
                sys.stdout.write(job_id + "\n")
            return
        with progress_bar() as bar:
            task = bar.add_task("classifying", total=submission.documents)

            def show(p: JobsProgress) -> None:
                bar.update(task, completed=p.done)

            jobs = client.wait_all(submission.ids, poll_s=poll, timeout_s=timeout, on_progress=show)
        written = write_results(client.results_all(submission.ids), output)
    failed = [j for j in jobs if j["status"] != JobStatus.SUCCEEDED]
    errors_n = sum(j["progress"]["documents_failed"] for j in jobs)
    where = f" to {output}" if output else ""
    console.print(f"wrote {written} results{where}; {errors_n} document(s) failed", highlight=False)
    if failed:
        states = ", ".join(f"{j['id']} {j['status']}" for j in failed)
        raise _fail(ExitCode.JOB_NOT_SUCCEEDED, f"not succeeded: {states}")


@app.command()
def status(job_id: str, url: Url = DEFAULT_URL, api_key: ApiKey = None) -> None:
    """Print a job's status as JSON."""
    with _errors(), _client(url, api_key) as client:
        job = client.job(job_id)
    sys.stdout.write(json.dumps(job, indent=2) + "\n")


@app.command()
def results(
    job_id: str, output: Output = None, url: Url = DEFAULT_URL, api_key: ApiKey = None
) -> None:
    """Write a job's results as JSON lines, in upload order (those done so far, if running)."""
    with _errors(), _client(url, api_key) as client:
        job = client.job(job_id)
        written = write_results(client.results(job_id), output)
    if not JobStatus(job["status"]).final:
        console.print(f"job {job_id} is {job['status']}: {written} of {job['documents']} results")


@app.command()
def cancel(job_id: str, url: Url = DEFAULT_URL, api_key: ApiKey = None) -> None:
    """Cancel a job: shards not started are skipped; print its status as JSON."""
    with _errors(), _client(url, api_key) as client:
        job = client.cancel(job_id)
    sys.stdout.write(json.dumps(job, indent=2) + "\n")


@app.command("submit-manifest")
def submit_manifest(
    objects: Annotated[
        list[str] | None,
        typer.Argument(help="Objects in your prefix of the server's store (names or URIs)."),
    ] = None,
    prefix: Annotated[
        str | None, typer.Option(help="Every object under this prefix instead.")
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model (default: the API's default).")] = None,
    results: Annotated[
        str | None, typer.Option(help="Write the results back under this prefix when done.")
    ] = None,
    webhook_url: Annotated[str | None, typer.Option(help="Webhook called when it ends.")] = None,
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
) -> None:
    """Create a job of objects in the server's object store (docs/manifests.md); prints the
    job id."""
    if bool(objects) == (prefix is not None):
        raise _fail(ExitCode.USAGE, "name objects or --prefix, not both")
    with _errors(), _client(url, api_key) as client:
        job = submit_objects(
            client,
            objects=objects or None,
            prefix=prefix,
            model=model,
            results=results,
            webhook_url=webhook_url,
        )
    sys.stdout.write(job["id"] + "\n")


@app.command()
def models(url: Url = DEFAULT_URL, api_key: ApiKey = None) -> None:
    """List the models Triton serves."""
    with _errors(), _client(url, api_key) as client:
        served = client.models()
    table = Table("name", "version", "state", "labels", "max_seq_len")
    for m in served:
        table.add_row(
            m["name"],
            m["version"] or "",
            m["state"] + (" (pinned)" if m.get("pinned") else ""),
            ", ".join(m["labels"] or []),
            str(m["max_seq_len"] or ""),
        )
    Console().print(table)


# The operator's commands need the server's packages: the model toolchain (conversion/cli.py:
# a checkpoint to a served, parity-checked model) and tenants' keys (api/keys_cli.py: the job
# store's Redis). The client installed alone (docq-client, docs/client.md) has the commands
# above only.
if find_spec("api") is not None and find_spec("conversion") is not None:
    from api.keys_cli import app as keys_app
    from conversion.cli import convert, validate

    app.command()(convert)
    app.command()(validate)
    app.add_typer(keys_app, name="keys")


if __name__ == "__main__":
    app()
