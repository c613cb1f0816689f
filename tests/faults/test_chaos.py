"""The chaos run in small (bench/faults/chaos.py, judged by bench/faults/check.py): for 45 s
under a job, with small jobs beside it and webhooks to a verifying receiver, a seeded
schedule SIGKILLs a random process of the stack (bulk, small-job and webhooks workers,
tritonserver, redis-server, the API) every 10-30 s, sometimes two, and starts each again
after 1-4 s. Afterwards nothing is lost, duplicated or relabelled (against the fault-free
run of the same documents), every job is final, every event reached the receiver once, and
the last job was done within 60 s of the last fault. `python -m bench.faults chaos` runs
the same for longer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.faults.chaos import Config, run

pytestmark = [pytest.mark.e2e, pytest.mark.faults, pytest.mark.slow]


@pytest.mark.timeout(900)
def test_random_kills_under_a_job_lose_duplicate_and_relabel_nothing(tmp_path: Path) -> None:
    # seed 1358: redis and the bulk worker at once (~10 s), then webhooks and triton (~33 s)
    cfg = Config(
        seconds=45,
        documents=300,  # the job spans the first kill of the bulk worker
        seed=1358,
        workdir=tmp_path,
        small_every_s=8,
        settle_timeout_s=120,  # a run that does not recover fails in minutes, not hours
    )
    report = run(cfg)
    assert len(report["faults"]) >= 2, report["faults"]  # the seed gives kills, not luck
    # the jobs and their documents beside the reference run's
    assert report["accepted"] - 1 >= 4 and report["documents"] - 300 >= 300
    # on failure, the schedule and the client's counts: what CI prints is all there is
    seen = {k: report[k] for k in ("faults", "webhooks", "answers", "recovery_lag_s")}
    assert report["violations"] == [], seen
    assert report["webhooks"]["jobs"] == report["accepted"]  # each job and the reference run
