"""schemathesis against the API's own OpenAPI schema (issue 11): generated requests to every
operation, with a tenant's key, never get a 5xx, and every answer matches the schema (its
status code declared, its body valid). Against the real API on the session's Redis."""

from __future__ import annotations

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import positive_data_acceptance

from api.main import create_app
from api.uploads import NDJSON
from docq.config import Settings
from tests.conftest import tenant_headers

pytestmark = pytest.mark.e2e

# The schema as the app publishes it at /openapi.json (building it starts nothing).
schema = schemathesis.openapi.from_dict(create_app().openapi())


@schemathesis.serializer(NDJSON)
def ndjson(ctx: object, value: object) -> bytes:
    """An NDJSON upload is declared as a string: its text, as UTF-8 (no body: empty)."""
    if value is None or isinstance(value, bytes):
        return value or b""
    return str(value).encode("utf-8", "surrogatepass")


@pytest.fixture(scope="module")
def schemathesis_headers(settings: Settings) -> dict[str, str]:
    """A tenant of its own: the jobs it uploads count against no other test's limits."""
    return tenant_headers(settings, tenant="schemathesis")


# One test per operation, each with a node id of its own: schemathesis' own
# `schema.parametrize()` gives all of them one id, and pytest-xdist (make test) runs one
# item per id, so eight of the nine operations went untested there.
OPERATIONS = [(op.method.upper(), op.path) for op in (r.ok() for r in schema.get_all_operations())]


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_answer_matches_the_schema_and_none_is_a_5xx(
    method: str,
    path: str,
    data: st.DataObject,
    api: TestClient,
    schemathesis_headers: dict[str, str],
) -> None:
    case: schemathesis.Case = data.draw(schema[path][method].as_strategy())
    kwargs = case.as_transport_kwargs(base_url=str(api.base_url), headers=schemathesis_headers)
    kwargs.pop("cookies", None)  # the API reads none (httpx deprecates per-request cookies)
    if isinstance(kwargs.get("data"), bytes | str):  # raw bodies: requests' name, httpx's
        kwargs["content"] = kwargs.pop("data")
    response = api.request(**kwargs)
    # A schema-valid upload may still be refused (the published limits, a tenant's quota,
    # rules the loose `object` body does not state): a 4xx is fine, if it is declared.
    case.validate_response(response, excluded_checks=[positive_data_acceptance])
