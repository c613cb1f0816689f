"""client/models.py against the API: the client's types of the API's answers are the API's
own objects, field for field (its OpenAPI schema), and its enums have the API's values."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter

from api.main import app
from client import models
from client.documents import Limits
from docq import jobs, schemas
from docq.config import Settings

# Prose and presentation: what a reader sees, not what a program reads.
PROSE = {"title", "description", "default", "examples"}
# The answers the client reads, by their name in the API's schema.
ANSWERS = [
    "JobCreated",
    "JobPublic",
    "Progress",
    "DocumentFailure",
    "WebhookCreated",
    "ResultsPage",
    "ModelPublic",
    "ModelsPublic",
    "ErrorBody",
    "ErrorInfo",
]


def shape(schema: Any, defs: dict[str, Any]) -> Any:
    """A JSON schema with its references inlined and its prose left out. A date-time stays
    a string to the client (`format` is prose to it: it gets the ISO text as sent)."""
    if isinstance(schema, list):
        return [shape(item, defs) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        return shape(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    return {k: shape(v, defs) for k, v in schema.items() if k not in {*PROSE, "format", "$defs"}}


def api_shape(name: str) -> Any:
    components = app.openapi()["components"]["schemas"]
    return shape(components[name], components)


def client_shape(name: str) -> Any:
    schema = TypeAdapter(getattr(models, name)).json_schema(mode="serialization")
    return shape(schema, schema.get("$defs", {}))


@pytest.mark.parametrize("name", ANSWERS)
def test_each_answer_the_client_reads_is_the_apis_object(name: str) -> None:
    assert client_shape(name) == api_shape(name)


def test_a_field_the_api_adds_shows() -> None:
    """The comparison sees a difference (the test above can fail)."""
    assert client_shape("JobPublic") != {**api_shape("JobPublic"), "required": ["id"]}


def test_the_enums_have_the_apis_values_and_finality() -> None:
    assert list(models.JobStatus) == list(jobs.JobStatus)
    assert [s.final for s in models.JobStatus] == [s.final for s in jobs.JobStatus]
    assert list(models.OnInvalid) == list(schemas.OnInvalid)


def test_the_default_limits_are_the_servers_defaults() -> None:
    fields = Settings.model_fields
    assert Limits().max_documents == fields["max_documents_per_job"].default
    assert Limits().max_bytes == fields["max_upload_bytes"].default
