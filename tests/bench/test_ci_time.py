"""bench/ci_time.py reads make test's summary, its slowest tests and bash's `real`."""

from __future__ import annotations

import pytest

from bench.ci_time import parse

LOG = """\
============================= slowest 2 durations ==============================
728.65s call     tests/test_faults_triton.py::test_outage
30.53s setup    tests/serving/test_runtimes.py::test_served[tiny]
================= 712 passed, 26 skipped in 1634.88s (0:27:14) =================

real\t27m49.592s
"""


def test_summary_slowest_and_real_time_are_read() -> None:
    run = parse(LOG)
    assert run["tests_s"] == 1634.88
    assert run["counts"] == {"passed": 712, "skipped": 26}
    assert run["real_s"] == pytest.approx(27 * 60 + 49.592)
    assert run["slowest"] == [
        {"s": 728.65, "phase": "call", "test": "tests/test_faults_triton.py::test_outage"},
        {"s": 30.53, "phase": "setup", "test": "tests/serving/test_runtimes.py::test_served[tiny]"},
    ]


def test_a_log_without_a_summary_is_refused() -> None:
    with pytest.raises(SystemExit):
        parse("collected 3 items\n")
