"""tests/tiers.py: a test that starts a service, kills a process or builds a model without
its tier's marker fails, naming what it did; with the marker it runs."""

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
    subprocess.run([sys.executable, "-m", "celery", "--version"], capture_output=True)
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


def run(pytester: pytest.Pytester, body: str, *args: str) -> pytest.RunResult:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_it=body)
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    return pytester.runpytest_subprocess(*args)


@pytest.fixture
def pytester_repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    from tests.tiers import ROOT

    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the subprocess imports tests.tiers
    return pytester


@pytest.mark.parametrize("what", list(BODIES))
def test_an_unmarked_test_that_does_it_fails_naming_what_it_did(
    pytester_repo: pytest.Pytester, what: str
) -> None:
    result = run(pytester_repo, BODIES[what])
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*needs its tier's marker*{MARKER[what]}:*"])


@pytest.mark.parametrize("what", list(BODIES))
def test_the_same_test_with_its_marker_passes(pytester_repo: pytest.Pytester, what: str) -> None:
    marked = BODIES[what].replace("def test_it", f"@pytest.mark.{MARKER[what]}\ndef test_it")
    result = run(pytester_repo, "import pytest\n" + marked)
    result.assert_outcomes(passed=1)


def test_a_worker_fixture_without_e2e_is_refused_at_collection(
    pytester_repo: pytest.Pytester,
) -> None:
    result = run(pytester_repo, "def test_it(worker):\n    pass\n")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*must be marked e2e*", "*test_it.py::test_it: uses [[]'worker'[]]*"]
    )


@pytest.mark.parametrize("required", [False, True])
def test_a_missing_program_skips_a_bare_run_and_fails_make_test(
    pytester_repo: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, required: bool
) -> None:
    if required:
        monkeypatch.setenv(REQUIRE_TOOLS, "1")
    else:
        monkeypatch.delenv(REQUIRE_TOOLS, raising=False)
    body = "from tests.tiers import missing_tool\ndef test_it():\n    missing_tool('x', 'y')\n"
    result = run(pytester_repo, body)
    result.assert_outcomes(**({"failed": 1} if required else {"skipped": 1}))


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
