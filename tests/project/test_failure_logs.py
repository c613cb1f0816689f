"""tests/failure_logs.py: a failed test's report ends with the tails of the logs in its
tmp_path; a passing one's does not."""

from __future__ import annotations

import pytest

from tests.tiers import ROOT

pytest_plugins = ["pytester"]

BODY = """
def write_log(tmp_path):
    service = tmp_path / "service"
    service.mkdir()
    lines = [f"line {i}" for i in range(100)]
    (service / "worker.log").write_text("\\n".join(lines))

def test_fails(tmp_path):
    write_log(tmp_path)
    assert False

def test_passes(tmp_path):
    write_log(tmp_path)
"""


def test_a_failed_test_shows_the_last_lines_of_its_logs(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the subprocess imports tests.failure_logs
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # the venv's: half a minute
    pytester.makeconftest('pytest_plugins = ["tests.failure_logs"]\n')
    pytester.makepyfile(test_it=BODY)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert out.count("service/worker.log: its last 40 lines") == 1  # the failed test's only
    assert "line 99" in out and "line 60" in out
    assert "line 59" not in out  # its tail, not the whole log
