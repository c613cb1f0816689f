"""A failed test shows the tails of the service logs it wrote in its tmp_path.

Why: a fault test that fails once in a clean-clone CI run (a worker that stopped reading, a
Triton that crashed) is diagnosed from what CI printed, and the services' own logs die with
its machine. So the report of a failed test carries the last lines of every `*.log` under
its tmp_path (worker.log, api.log, triton.log, as devstack/services.py writes them).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

LINES = 40  # per log
WIDTH = 240  # characters per line
LOGS = 6  # per test


def tails(folder: Path) -> Iterator[tuple[str, str]]:
    """(title, text) of the last lines of each log under `folder`, by path."""
    for log in sorted(folder.rglob("*.log"))[:LOGS]:
        lines = log.read_text(errors="replace").splitlines()[-LINES:]
        text = "\n".join(line[:WIDTH] for line in lines)
        yield f"{log.relative_to(folder)}: its last {len(lines)} lines", text


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    report = outcome.get_result()
    folder = getattr(item, "funcargs", {}).get("tmp_path")
    if report.failed and call.when == "call" and isinstance(folder, Path) and folder.is_dir():
        report.sections.extend(tails(folder))
