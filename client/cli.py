"""`docq`: submit documents, follow jobs and read results from the command line."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from client.keys_cli import app as keys_app
from client.sdk import DocqAPIError, DocqClient
from conversion.cli import convert, validate

app = typer.Typer(
    help="docq: bulk document classification in front of Triton.", no_args_is_help=True
)
console = Console(stderr=True)

DEFAULT_API = "http://127.0.0.1:8080"
Api = Annotated[str, typer.Option("--api", envvar="DOCQ_API_URL", help="API base URL.")]


def _client(api: str) -> DocqClient:
    return DocqClient(api)


@app.command()
def submit(
    paths: Annotated[list[Path], typer.Argument(help="Text files (id = name) or .ndjson files.")],
    model: Annotated[str | None, typer.Option(help="Model (default: the API's default).")] = None,
    wait: Annotated[bool, typer.Option(help="Wait, then print the results as NDJSON.")] = False,
    api: Api = DEFAULT_API,
) -> None:
    """Upload documents as one job and print its id."""
    docs = []
    for p in paths:
        if p.suffix == ".ndjson":
            docs += [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
        else:
            docs.append({"id": p.name, "text": p.read_text()})
    client = _client(api)
    try:
        created = client.submit(docs, model)
        console.print(f"job [bold]{created['id']}[/] queued: {created['documents']} documents")
        if wait:
            job = client.wait(created["id"])
            console.print(f"job {job['id']}: {job['status']}")
            for r in client.results(created["id"]):
                sys.stdout.write(json.dumps(r) + "\n")
        else:
            sys.stdout.write(created["id"] + "\n")
    except DocqAPIError as exc:
        console.print(f"[red]{exc}[/]")
        raise typer.Exit(1) from None


@app.command()
def status(job_id: str, api: Api = DEFAULT_API) -> None:
    """Print a job's status as JSON."""
    sys.stdout.write(json.dumps(_client(api).job(job_id), indent=2) + "\n")


@app.command()
def results(job_id: str, api: Api = DEFAULT_API) -> None:
    """Print a job's results as NDJSON, in upload order."""
    for r in _client(api).results(job_id):
        sys.stdout.write(json.dumps(r) + "\n")


@app.command()
def models(api: Api = DEFAULT_API) -> None:
    """List the models Triton serves."""
    table = Table("name", "version", "state", "labels", "max_seq_len")
    for m in _client(api).models():
        table.add_row(
            m["name"],
            m["version"] or "",
            m["state"] + (" (pinned)" if m.get("pinned") else ""),
            ", ".join(m["labels"] or []),
            str(m["max_seq_len"] or ""),
        )
    Console().print(table)


# The model toolchain (conversion/cli.py): a checkpoint to a served, parity-checked model.
app.command()(convert)
app.command()(validate)
app.add_typer(keys_app, name="keys")


if __name__ == "__main__":
    app()
