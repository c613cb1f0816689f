"""`docq keys`: create, list and revoke tenants' API keys (an operator's command: it talks
to the job store's Redis directly, with the server's DOCQ_REDIS_URL and
DOCQ_API_KEY_SECRET, not to the API).

    docq keys create acme        # prints the new key once; only its hash is stored
    docq keys list               # key ids, tenants, creation times (never keys)
    docq keys revoke KEY_ID      # the next request with that key gets 401
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from docq.config import get_settings
from docq.errors import StoreUnavailable
from docq.store import connection
from docq.store.tenants import Tenants

app = typer.Typer(help="Tenants' API keys (needs the job store's Redis).", no_args_is_help=True)
console = Console(stderr=True)


def _tenants() -> Tenants:
    s = get_settings()
    return Tenants(connection.from_settings(s), secret=s.api_key_secret)


def _unavailable(exc: StoreUnavailable) -> typer.Exit:
    console.print(f"docq: {exc.message} ({exc.detail})", style="red", markup=False)
    return typer.Exit(6)


@app.command()
def create(tenant: Annotated[str, typer.Argument(help="The tenant the key acts for.")]) -> None:
    """Create a key for TENANT and print it (on stdout, once: it cannot be shown again)."""
    try:
        record, key = _tenants().create_key(tenant)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    except StoreUnavailable as exc:
        raise _unavailable(exc) from None
    console.print(f"key {record.id} for tenant {record.tenant!r}; store it now:", markup=False)
    print(key)


@app.command("list")
def list_keys() -> None:
    """Every key's id, tenant and creation time."""
    try:
        found = _tenants().list_keys()
    except StoreUnavailable as exc:
        raise _unavailable(exc) from None
    table = Table("key id", "tenant", "created")
    for k in found:
        table.add_row(k.id, k.tenant, k.created_at.isoformat(timespec="seconds"))
    Console().print(table)


@app.command()
def revoke(key_id: Annotated[str, typer.Argument(help="The id `docq keys list` shows.")]) -> None:
    """Revoke a key: the next request with it gets 401."""
    try:
        revoked = _tenants().revoke_key(key_id)
    except StoreUnavailable as exc:
        raise _unavailable(exc) from None
    if not revoked:
        console.print(f"docq: no key {key_id!r}", style="red", markup=False)
        raise typer.Exit(5)
    console.print(f"revoked {key_id}", markup=False)
