"""An upload is answered 202 only once the replica has it (issue 22: redis_wait_replicas,
Redis WAIT): against a real master, replica and Sentinels, an upload the replica cannot
confirm (it has left the master) gets a 503 JSON with Retry-After and leaves nothing behind,
its Idempotency-Key free; once the replica is back, the same upload is accepted.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from devstack.sentinels import SentinelGroup, redis_sentinels
from docq import keys
from docq.config import Settings
from tests.api.conftest import unworked
from tests.conftest import MODEL_REPOSITORY, tenant_headers
from tests.support.polling import until

DOCS = [{"id": "a", "text": "INVOICE No. 1 Total due 10.00 EUR"}]


@pytest.fixture
def group(tmp_path: Path) -> Iterator[SentinelGroup]:
    with redis_sentinels(tmp_path) as g:
        yield g


def test_an_upload_the_replica_does_not_confirm_gets_503_and_leaves_nothing(
    group: SentinelGroup, triton_url: str
) -> None:
    from api.main import create_app

    settings = Settings(
        redis_url=group.url,
        triton_grpc_url=triton_url,
        model_repository=MODEL_REPOSITORY,
        redis_wait_replicas=1,
        redis_wait_timeout_ms=300,
    )
    master_port = group.master_port()
    assert master_port is not None
    master = redis.Redis(port=master_port)
    replica = redis.Redis(port=next(p for p in group.servers if p != master_port))
    key = {"idempotency-key": "while-alone"}
    with TestClient(create_app(unworked(settings)), headers=tenant_headers(settings)) as api:
        assert api.post("/v1/jobs", json={"documents": DOCS}).status_code == 202
        replica.replicaof("NO", "ONE")  # the replica's host is lost: the master is alone
        until(lambda: master.info("replication")["connected_slaves"] == 0, "the replica gone", 10)
        jobs_before = set(master.scan_iter("docq:job:*"))

        refused = api.post("/v1/jobs", json={"documents": DOCS}, headers=key)
        assert refused.status_code == 503, refused.text
        assert refused.headers["content-type"] == "application/json"
        assert refused.headers["retry-after"] == "5"
        assert refused.json()["error"]["code"] == "store_not_replicated"
        assert set(master.scan_iter("docq:job:*")) == jobs_before  # no job, not half of one

        replica.replicaof("127.0.0.1", master_port)
        until(
            lambda: master.info("replication").get("slave0", {}).get("state") == "online",
            "the replica back",
            30,
        )
        # The first WAIT after the resync may still miss its 300 ms on a busy machine: the
        # client retries a 503 as Retry-After says, with the same key.
        answers: list[Any] = []

        def accepted_now() -> bool:
            answers.append(api.post("/v1/jobs", json={"documents": DOCS}, headers=key))
            return bool(answers[-1].status_code != 503)

        until(accepted_now, "an upload accepted with the replica back", 20, every=0.5)
        accepted = answers[-1]
        assert accepted.status_code == 202, accepted.text  # the key was not kept by the 503
        assert replica.exists(keys.job(accepted.json()["id"]))
