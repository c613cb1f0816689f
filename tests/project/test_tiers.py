"""tests/tiers.py: a test that starts a service, kills a process or builds a model without
its tier's marker fails, naming what it did; with the marker it runs.

Each inner pytest is a subprocess (the audit hook it installs cannot be removed), so the
cases share one run, which loads no plugin but tests.tiers: a run costs seconds on a loaded
2-core machine, a case almost nothing. The service started is uvicorn's `--version` (one of
tests.tiers.SERVICES, as Celery is, and a tenth of Celery's start-up).
"""

from __future__ import annotations

import pytest

from tests.tiers import REQUIRE_TOOLS

pytest_plugins = ["pytester"]

CONFTEST = """
import pytest
pytest_plugins = ["tests.tiers"]

@pytest.fixture
def worker():
    return "a Celery worker would start here"
"""

BODIES = {
    "service": """
import subprocess, sys
def test_it():
    subprocess.run([sys.executable, "-m", "uvicorn", "--version"], capture_output=True)
""",
    "kill": """
import os, signal, subprocess
def test_it():
    child = subprocess.Popen(["sleep", "30"])
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
""",
    "build": """
def test_it(tmp_path):
    (tmp_path / "model.onnx").write_bytes(b"not really a graph")
""",
}
MARKER = {"service": "e2e", "kill": "faults", "build": "build"}
MISSING_TOOL = f"""
from tests.tiers import missing_tool
def test_skipped_in_a_bare_run(monkeypatch):
    monkeypatch.delenv("{REQUIRE_TOOLS}", raising=False)
    missing_tool("x", "y")
def test_failed_under_make_test(monkeypatch):
    monkeypatch.setenv("{REQUIRE_TOOLS}", "1")
    missing_tool("x", "y")
"""


def run(pytester: pytest.Pytester, **files: str) -> pytest.RunResult:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(**files)
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    return pytester.runpytest_subprocess("-v")


@pytest.fixture
def pytester_repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    from tests.tiers import ROOT

    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the subprocess imports tests.tiers
    # the venv's plugins (schemathesis, hypothesis, playwright...) cost an inner run half a
    # minute on 2 loaded cores to load; its tests need only tests.tiers
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    return pytester


@pytest.fixture
def tier_run(pytester_repo: pytest.Pytester) -> pytest.RunResult:
    """One inner run: each body unmarked and marked, and a program that is not installed."""
    files = {f"test_{what}_unmarked": body for what, body in BODIES.items()}
    for what, body in BODIES.items():
        marked = body.replace("def test_it", f"@pytest.mark.{MARKER[what]}\ndef test_it")
        files[f"test_{what}_marked"] = "import pytest\n" + marked
    return run(pytester_repo, test_missing_tool=MISSING_TOOL, **files)


def test_unmarked_tests_fail_naming_what_they_did_marked_pass_missing_programs_skip(
    tier_run: pytest.RunResult,
) -> None:
    tier_run.assert_outcomes(failed=4, passed=3, skipped=1)
    for what in BODIES:
        tier_run.stdout.fnmatch_lines([f"test_{what}_unmarked.py::test_it FAILED*"])
        tier_run.stdout.fnmatch_lines([f"test_{what}_marked.py::test_it PASSED*"])
        tier_run.stdout.fnmatch_lines([f"*needs its tier's marker*{MARKER[what]}:*"])
    # a program that is not installed: skipped in a bare run, a failure under `make test`
    tier_run.stdout.fnmatch_lines(
        [
            "test_missing_tool.py::test_skipped_in_a_bare_run SKIPPED*",
            "test_missing_tool.py::test_failed_under_make_test FAILED*",
        ]
    )
    tier_run.stdout.fnmatch_lines([f"*{REQUIRE_TOOLS} says this run must have it*"])


def test_a_worker_fixture_without_e2e_is_refused_at_collection(
    pytester_repo: pytest.Pytester,
) -> None:
    result = run(pytester_repo, test_it="def test_it(worker):\n    pass\n")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*must be marked e2e*", "*test_it.py::test_it: uses [[]'worker'[]]*"]
    )


class _Item:
    """What the collection hook reads of an item."""

    def __init__(self, nodeid: str) -> None:
        self.nodeid, self.fixturenames = nodeid, ()

    def get_closest_marker(self, name: str) -> None:
        return None


def test_two_tests_with_one_node_id_are_refused_at_collection() -> None:
    # two items, one id: what schemathesis' parametrize made, and xdist ran one of them
    from tests import tiers

    items = [_Item("t.py::a"), _Item("t.py::b"), _Item("t.py::a")]
    with pytest.raises(pytest.UsageError, match=r"same node id.*t\.py::a"):
        tiers.pytest_collection_modifyitems(None, items)  # type: ignore[arg-type]
    tiers.pytest_collection_modifyitems(None, items[:2])  # type: ignore[arg-type]
