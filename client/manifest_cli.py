"""`docq submit-manifest`: a job of objects in the tenant's store (docs/manifests.md).

docq submit-manifest batch-7/a.ndjson batch-7/scan.pdf --results batch-7/out/
docq submit-manifest --prefix batch-7/
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from client.manifests import submit_manifest as submit


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
    url: Annotated[str, typer.Option(envvar="DOCQ_URL", help="The docq API.")] = (
        "http://127.0.0.1:8080"
    ),
    api_key: Annotated[str | None, typer.Option(envvar="DOCQ_API_KEY", help="API key.")] = None,
) -> None:
    """Create a job of objects in the server's object store; prints the job id."""
    from client.cli import ExitCode, _client, _errors, _fail  # (cli registers this command)

    if bool(objects) == (prefix is not None):
        raise _fail(ExitCode.USAGE, "name objects or --prefix, not both")
    with _errors(), _client(url, api_key) as client:
        job = submit(
            client,
            objects=objects or None,
            prefix=prefix,
            model=model,
            results=results,
            webhook_url=webhook_url,
        )
    sys.stdout.write(job["id"] + "\n")
