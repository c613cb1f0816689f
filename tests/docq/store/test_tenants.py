"""API keys and per-tenant load against a real redis-server, and `docq keys`."""

from __future__ import annotations

import hmac
from collections.abc import Iterator

import pytest
import redis
from typer.testing import CliRunner

from client.cli import app as cli
from docq import keys
from docq.config import get_settings
from docq.jobs import JobStatus
from docq.store import Document, JobStore
from docq.store.tenants import Tenants, key_hash

SECRET = "server-secret"


@pytest.fixture
def tenants(store: JobStore) -> Tenants:
    return Tenants(store.r, secret=SECRET)


def all_stored_bytes(r: redis.Redis) -> bytes:
    """Every key name and value of the store, hashes and sets included."""
    out = []
    for name in r.keys("*"):
        out.append(name)
        kind = r.type(name)
        if kind == b"hash":
            for k, v in r.hgetall(name).items():
                out += [k, v]
        elif kind == b"set":
            out += list(r.smembers(name))
        elif kind == b"string":
            out.append(r.get(name))
    return b"\n".join(out)


def test_only_a_keyed_hash_of_the_key_is_stored(tenants: Tenants) -> None:
    record, key = tenants.create_key("acme")
    assert key.startswith(f"dq_{record.id}_") and len(key) > 40
    stored = all_stored_bytes(tenants.r)
    assert key.encode() not in stored
    # not even the secret part (which may itself hold "_": it is base64url)
    assert key.removeprefix(f"dq_{record.id}_").encode() not in stored
    assert key_hash(SECRET, key).encode() in stored
    assert tenants.authenticate(key) == "acme"


def test_the_hash_is_keyed_by_the_server_secret(tenants: Tenants) -> None:
    _, key = tenants.create_key("acme")
    assert Tenants(tenants.r, secret="another secret").authenticate(key) is None


def test_unknown_altered_and_malformed_keys_are_refused(tenants: Tenants) -> None:
    record, key = tenants.create_key("acme")
    assert tenants.authenticate(key[:-1] + ("A" if key[-1] != "A" else "B")) is None
    assert tenants.authenticate(f"dq_{'0' * 12}_{key.split('_')[-1]}") is None
    for bad in ("", "dq_", "dq__x", "Bearer", record.id, "dq_ab!_x"):
        assert tenants.authenticate(bad) is None


def test_keys_are_compared_in_constant_time(
    tenants: Tenants, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, key = tenants.create_key("acme")
    calls: list[tuple[str, str]] = []
    real = hmac.compare_digest

    def spy(a: str, b: str) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    assert tenants.authenticate(key) == "acme"
    assert calls == [(key_hash(SECRET, key), key_hash(SECRET, key))]
    calls.clear()
    assert tenants.authenticate(f"dq_{'0' * 12}_nope") is None  # unknown id: compared too
    assert len(calls) == 1


def test_revoke_and_list(tenants: Tenants) -> None:
    first, key = tenants.create_key("acme")
    second, other = tenants.create_key("globex")
    listed = {k.id: k.tenant for k in tenants.list_keys()}
    assert listed[first.id] == "acme" and listed[second.id] == "globex"
    assert tenants.revoke_key(first.id) is True
    assert tenants.authenticate(key) is None
    assert tenants.authenticate(other) == "globex"
    assert first.id not in {k.id for k in tenants.list_keys()}
    assert tenants.revoke_key(first.id) is False


def test_bad_tenant_names_are_refused(tenants: Tenants) -> None:
    for bad in ("", "x" * 65, "a\nb"):
        with pytest.raises(ValueError):
            tenants.create_key(bad)


def test_load_counts_queued_and_running_jobs_until_final(store: JobStore) -> None:
    tenants = Tenants(store.r)
    tenant = f"load-{store.new_job_id()}"
    done = [Document(f"d{i}", "x") for i in range(3)]
    a = store.create_job("doc-type", done, tenant=tenant)
    store.create_job("doc-type", [Document("e", "x")] * 5, tenant=tenant)
    store.create_job("doc-type", [Document("o", "x")], tenant="someone else")
    assert (tenants.load(tenant).jobs, tenants.load(tenant).documents) == (2, 8)
    assert store.mark_running(a.id) is JobStatus.RUNNING
    assert tenants.load(tenant).documents == 8  # running, nothing done yet
    store.cancel(a.id)  # final: it leaves the tenant's load (as a finished job does)
    assert (tenants.load(tenant).jobs, tenants.load(tenant).documents) == (1, 5)
    assert a.id.encode() not in store.r.smembers(keys.tenant_jobs(tenant))  # pruned


@pytest.fixture
def cli_env(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("DOCQ_REDIS_URL", redis_url)
    monkeypatch.setenv("DOCQ_API_KEY_SECRET", SECRET)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_docq_keys_create_list_revoke(cli_env: None, store: JobStore) -> None:
    runner = CliRunner()
    created = runner.invoke(cli, ["keys", "create", "cli-tenant"])
    assert created.exit_code == 0, created.output
    key = created.stdout.strip().splitlines()[-1]
    tenants = Tenants(store.r, secret=SECRET)
    assert tenants.authenticate(key) == "cli-tenant"
    key_id = key.split("_")[1]
    listed = runner.invoke(cli, ["keys", "list"])
    assert key_id in listed.stdout and "cli-tenant" in listed.stdout and key not in listed.stdout
    assert runner.invoke(cli, ["keys", "revoke", key_id]).exit_code == 0
    assert tenants.authenticate(key) is None
    assert runner.invoke(cli, ["keys", "revoke", key_id]).exit_code == 5
