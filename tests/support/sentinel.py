"""What the Redis-failover fault tests share: the settings of processes that must follow a
promoted replica quickly, and the master's SIGKILL."""

from __future__ import annotations

import os
import signal
from typing import Any

from devstack.sentinels import SentinelGroup
from docq.config import Settings
from tests.conftest import MODEL_REPOSITORY


def failover_settings(group: SentinelGroup, triton_url: str, **extra: Any) -> Settings:
    """Settings on the Sentinels: uploads wait for the replica (a 202 means the job was on
    it when the master died), and the sweeper, audits and retries run on a test's clock."""
    return Settings(
        redis_url=group.url,
        redis_wait_replicas=1,
        redis_wait_timeout_ms=1000,
        redis_socket_timeout_s=5,
        triton_grpc_url=triton_url,
        model_repository=MODEL_REPOSITORY,
        shard_size=8,
        task_retry_backoff_s=1,
        shard_lease_s=10,
        sweep_interval_s=1,
        audit_interval_s=5,
        **extra,
    )


def kill_master(group: SentinelGroup) -> int:
    """SIGKILL the master; its port."""
    port = group.master_port()
    assert port is not None
    os.kill(group.servers[port].pid, signal.SIGKILL)
    group.servers[port].wait(10)
    return port
