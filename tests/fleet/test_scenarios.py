"""The fleet's scenarios (issue 41), each a run of bench/faults/fleet.py on real processes in
real network namespaces: a client uploading throughout while a nemesis acts, then the
checker's verdict on what the client saw (bench/faults/check.py). One module, one fleet:
every scenario here shares it (about a minute to start), and make test's xdist runs a
module in one process, so two fleets never share the bridge's name.

Skipped, saying why, where the machine gives no root or no `ip netns`.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.faults.fleet import Step, random_steps, reference, run
from devstack.fleet import net
from devstack.fleet.fleet import START_S, Fleet
from devstack.fleet.hosts import Layout
from devstack.fleet.nemesis import Halves, Isolate, LoseHost, SlowLink, Together
from devstack.services import wait_for

# The first test's limit covers starting the fleet too (a few minutes on a busy machine).
pytestmark = [pytest.mark.e2e, pytest.mark.faults]

# Namespaces dqx-*, bridge dqx-br on 10.77.3.0/24: apart from `python -m devstack.fleet`'s
# (dqf, 10.77.0) and the bench's (dqb, 10.77.1) on the same machine.
NETWORK = net.Network("dqx", "10.77.3")
# The longest an upload may wait for its answer while the halves are apart (docs/fleet.md):
# the API's model catalogue asks each of the two unreachable Tritons for at most 5 s
# (docq/catalog.py), a Redis command waits at most DOCQ_REDIS_SOCKET_TIMEOUT_S (3 s) and
# WAIT 1 s; the rest is room for a busy machine. A 503 JSON within it, never a hang.
SPLIT_ANSWER_S = 20.0


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    if reason := net.probe(NETWORK):
        pytest.skip(f"no fleet on this machine: {reason}")
    fleet = Fleet(Layout(NETWORK, tmp_path_factory.mktemp("fleet") / "hosts"))
    try:
        fleet.up()  # removes what a crashed run of this module left, first
        yield fleet
    finally:
        fleet.down()


@pytest.fixture(scope="module")
def expected(fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The fault-free labels of the documents every scenario uploads (one run for all)."""
    return reference(fleet, tmp_path_factory.mktemp("reference"))


@pytest.fixture(autouse=True)
def mended(fleet: Fleet) -> Iterator[None]:
    """Each scenario starts on a whole fleet: links healed, ended processes started again."""
    fleet.mend()
    yield


def verdict(report: dict[str, object]) -> str:
    return json.dumps({k: v for k, v in report.items() if k != "faults"}, indent=1)[:6000]


@pytest.mark.timeout(900)
def test_a_docq_process_that_ends_by_itself_is_started_again(fleet: Fleet) -> None:
    """A webhooks worker whose host was isolated exited by itself (code 1: Celery's
    "Unrecoverable error" from kombu's transport, docs/fleet.md); a Kubernetes pod's
    container is restarted then, and so is the fleet's process, by its supervisor: here
    the worker ended abruptly (its process group SIGKILLed, not its host lost)."""
    key = ("worker-2", "webhooks")
    proc = fleet.procs[key]
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)
    wait_for(
        lambda: fleet.procs[key] is not proc and fleet.ready(fleet.service(*key)),
        START_S,
        "the webhooks worker started again by the fleet's supervisor",
    )
    assert {"host": "worker-2", "name": "webhooks", "code": -signal.SIGKILL}.items() <= (
        fleet.restarts[-1].items()
    )


@pytest.mark.timeout(900)
def test_the_redis_master_partitioned_from_every_host_loses_nothing_acknowledged(
    fleet: Fleet, tmp_path: Path, expected: dict[str, str]
) -> None:
    """The master's host cut off for 30 s while uploads and shards run: the Sentinels
    promote a replica; what the old master took meanwhile (nothing a replica confirmed)
    is resynced away when it comes back as a replica."""
    report = run(fleet, [Step(Isolate("master"), 30)], tmp_path, seed=41, expected=expected)
    assert report["violations"] == [], verdict(report)
    assert report["accepted"], verdict(report)


@pytest.mark.timeout(900)
def test_the_api_and_the_master_apart_from_the_sentinel_majority_lose_nothing_acknowledged(
    fleet: Fleet, tmp_path: Path, expected: dict[str, str]
) -> None:
    """The API, the client and the master on one side, the Sentinel majority, the workers
    and the Tritons on the other, for 30 s: the old master cannot have an upload confirmed
    by a replica, so the API answers 503; the majority promotes a replica, and when the
    halves meet again the old master's unconfirmed writes are what is resynced away."""
    report = run(fleet, [Step(Halves(), 30)], tmp_path, seed=42, expected=expected)
    assert report["violations"] == [], verdict(report)
    assert report["answers"].get("503"), verdict(report)  # the split was felt, and refused
    [split] = report["recovery"]
    assert split["longest_answer_s"] <= SPLIT_ANSWER_S, verdict(report)


@pytest.mark.timeout(900)
def test_a_worker_host_partitioned_mid_shards_for_60_s_counts_nothing_twice(
    fleet: Fleet, tmp_path: Path, expected: dict[str, str]
) -> None:
    """worker-1 cut off for 60 s while bulk shards run: its leases expire, the sweeper
    gives its shards to worker-2, and what worker-1 writes once healed (a late result, a
    late final state) must not count twice."""
    steps = [Step(Isolate("worker-1"), 60, wait_s=15)]
    client = {"bulk_share": 0.2}
    report = run(fleet, steps, tmp_path, seed=43, client=client, expected=expected)
    assert report["violations"] == [], verdict(report)
    assert report["accepted"], verdict(report)


@pytest.mark.timeout(900)
def test_a_triton_host_unreachable_then_slow_then_lost_loses_nothing(
    fleet: Fleet, tmp_path: Path, expected: dict[str, str]
) -> None:
    """triton-1 cut off for 20 s, then its link slow for 20 s, then the host lost for
    20 s: the workers and the API's catalogue turn to triton-2 each time."""
    steps = [
        Step(Isolate("triton-1"), 20),
        Step(SlowLink("triton-1"), 20),
        Step(LoseHost("triton-1"), 20),
    ]
    report = run(fleet, steps, tmp_path, seed=44, expected=expected)
    assert report["violations"] == [], verdict(report)
    assert report["accepted"], verdict(report)


@pytest.mark.timeout(900)
def test_a_worker_host_and_a_triton_host_lost_at_once_lose_nothing(
    fleet: Fleet, tmp_path: Path, expected: dict[str, str]
) -> None:
    """worker-2 and triton-2 lost together for 20 s (every process SIGKILLed), then
    booted again: worker-1 and triton-1 carry the work meanwhile."""
    steps = [Step(Together((LoseHost("worker-2"), LoseHost("triton-2"))), 20)]
    report = run(fleet, steps, tmp_path, seed=45, expected=expected)
    assert report["violations"] == [], verdict(report)
    assert report["accepted"], verdict(report)


@pytest.mark.timeout(900)
def test_a_short_seeded_run_of_random_nemeses(
    fleet: Fleet, tmp_path: Path, expected: dict[str, str]
) -> None:
    """What `python -m bench.faults fleet --seconds 60 --seed 7` runs, on this module's fleet."""
    report = run(fleet, random_steps(60, seed=7), tmp_path, seed=7, expected=expected)
    assert report["violations"] == [], verdict(report)
