"""The test tiers, and the hook that keeps their markers honest (issue 23).

    make test-fast   -m "not (e2e or faults or build or slow)": minutes, while you work
    make test-e2e    the rest: real tritonserver, Celery workers, kills, model builds
    make test        everything (what .ci/run calls)

A fast test may use the session's shared tritonserver (started once per run, only read:
the API's model catalogue has no honest stand-in) and redis-servers (the shared one, or
one of its own: it starts in milliseconds, and the job store's Lua scripts need a real
one), but starts no other service, stops no process and builds no model. What a
test does is checked, not trusted: while each test sets up and runs, an audit hook
(`sys.addaudithook`) sees every process started, every signal sent and every model file
written, and a test that does one of these without its marker fails, naming what it did:

- `e2e`: it starts a service of its own (tritonserver, a Celery worker, uvicorn, honcho,
  Chromium; a redis-server or a Redis Sentinel, which start in milliseconds, are allowed),
  or uses a Celery worker fixture (checked at collection);
- `faults`: it sends a signal to a process itself (SIGKILL, SIGSTOP, SIGTERM: a kill
  test; stopping what devstack started, as a `with` block ends, is not one);
- `build`: it writes a model (ONNX export, a converted or quantized graph).
"""

from __future__ import annotations

import os
import signal
import sys
import sysconfig
import threading
from pathlib import Path
from typing import Any

import pytest

MARKERS = {
    "e2e": "starts real services: tritonserver, Celery workers, the API as a process",
    "faults": "kills or stops real processes",
    "build": "builds, converts or trains a model",
    "slow": "runs for minutes (a 10-minute outage, training); still part of make test",
}
FAST = "not (e2e or faults or build or slow)"

# Fixtures that start Celery workers: a test using one is e2e (they consume every queued
# job, so what a fast test sees would depend on the order the tests ran in).
E2E_FIXTURES = frozenset({"worker", "priority_worker", "extract_worker", "webhooks_worker"})
# The services a fast test may share: started by these fixtures, once per session.
SHARED = frozenset({"redis_url", "triton_url", "service_dir"})
# Programs that are services (argv[0]'s name, or the module of `python -m`).
# redis-server is not among them: it starts in milliseconds, and the job store's tests need
# a real one (a private one, to stop it or to see a quiet keyspace) as much as the shared.
# Nor is redis-sentinel: the same binary in Sentinel mode (`redis-server --sentinel`, which
# devstack runs), as quick to start; a Sentinel topology of five processes is ready in the
# few seconds its Sentinels take to find each other (tests/docq/store/test_sentinel.py).
SERVICES = (
    "tritonserver", "celery", "uvicorn", "gunicorn",
    "honcho", "flower", "chromium", "locust",
)  # fmt: skip
MODEL_SUFFIXES = (".onnx", ".plan", ".engine")
ROOT = Path(__file__).resolve().parents[1]
STDLIB = sysconfig.get_paths()["stdlib"]
DEADLY = {signal.SIGKILL, signal.SIGSTOP, signal.SIGTERM, signal.SIGINT}


class _Audit:
    """What the running test did (set while pytest sets it up and calls it)."""

    def __init__(self) -> None:
        self.item: pytest.Item | None = None
        self.fixtures: list[str] = []  # fixtures being set up now (a stack)
        self.did: dict[str, list[str]] = {}
        self.lock = threading.Lock()

    def note(self, marker: str, what: str) -> None:
        if self.item is None or any(f in SHARED for f in self.fixtures):
            return
        if self.item.get_closest_marker(marker) is not None:
            return
        with self.lock:
            self.did.setdefault(marker, []).append(what)

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if self.item is None:
            return
        if event == "subprocess.Popen":
            executable, argv = args[0], args[1]  # argv: a list, or a shell command line
            argv = [str(a) for a in argv] if isinstance(argv, list | tuple) else str(argv).split()
            argv = argv or [str(executable)]
            if service := _service(argv):
                self.note("e2e", f"started {service} ({' '.join(argv)[:120]})")
        elif event in ("os.kill", "os.killpg"):
            pid, sig = args[0], args[1]
            if sig in DEADLY and pid != os.getpid() and _sent_by_docq():
                self.note("faults", f"sent {signal.Signals(sig).name} to {pid}")
        elif event == "open" and len(args) > 1 and isinstance(args[0], str | Path):
            mode = args[1] if isinstance(args[1], str) else ""
            if ("w" in mode or "x" in mode) and str(args[0]).endswith(MODEL_SUFFIXES):
                self.note("build", f"wrote {args[0]}")


def _sent_by_docq() -> bool:
    """Whether the signal is a test's own (a kill), not the orderly stop of a service that
    devstack/ started (leaving a `with celery_worker(...)`) nor a library stopping helpers
    of its own (a converter's worker processes)."""
    frame = sys._getframe(2)  # the caller of os.kill (1 is the audit hook's __call__)
    while frame is not None and frame.f_code.co_filename.startswith(STDLIB):
        frame = frame.f_back  # subprocess.Popen.kill, signal helpers
    if frame is None or "site-packages" in frame.f_code.co_filename:
        return False
    return not Path(frame.f_code.co_filename).is_relative_to(ROOT / "devstack")


def _service(argv: list[str]) -> str | None:
    words = [Path(argv[0]).name]
    if "-m" in argv[:-1]:
        words.append(argv[argv.index("-m") + 1])
    if Path(argv[0]).name.startswith("python") and len(argv) > 1 and argv[1].endswith(".py"):
        words.append(Path(argv[1]).stem)
    for word in words:
        for name in SERVICES:
            if word == name or word.startswith(f"{name}.") or word.startswith(f"{name}-"):
                return name
    return None


AUDIT = _Audit()


def pytest_configure(config: pytest.Config) -> None:
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    sys.addaudithook(AUDIT)


@pytest.hookimpl(trylast=True)  # the list as every other plugin left it
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    missing = [
        f"{item.nodeid}: uses {sorted(E2E_FIXTURES & set(item.fixturenames))}"
        for item in items
        if E2E_FIXTURES & set(getattr(item, "fixturenames", ()))
        and item.get_closest_marker("e2e") is None
    ]
    if missing:
        raise pytest.UsageError(
            "tests that use a Celery worker fixture must be marked e2e (tests/tiers.py):\n  "
            + "\n  ".join(missing)
        )
    # pytest-xdist runs one item per node id: two items with one id would run one of them
    # (schemathesis' `schema.parametrize()` did that), so an id must name one test.
    seen: dict[str, int] = {}
    for item in items:
        seen[item.nodeid] = seen.get(item.nodeid, 0) + 1
    if twice := sorted(nodeid for nodeid, n in seen.items() if n > 1):
        raise pytest.UsageError(
            "tests with the same node id (make test's xdist would run only one of them): "
            + ", ".join(twice)
        )
    # The slow tests first (a stable sort: the rest keep their order): under `make test`'s
    # two processes (pytest-xdist, a module each), the 10-minute outage starts at once and
    # its waiting overlaps the rest of the suite instead of coming last.
    # Among them, the largest timeout first.
    items.sort(key=lambda item: (item.get_closest_marker("slow") is None, -_timeout(item)))


def _timeout(item: pytest.Item) -> float:
    marker = item.get_closest_marker("timeout")
    return float(marker.args[0]) if marker is not None and marker.args else 0.0


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: Any, request: Any) -> Any:
    AUDIT.fixtures.append(fixturedef.argname)
    try:
        yield
    finally:
        AUDIT.fixtures.pop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Any:
    AUDIT.item, AUDIT.did = item, {}
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    yield
    AUDIT.item = None
    if AUDIT.did:
        lines = [f"{mark}: {', '.join(sorted(set(what))[:3])}" for mark, what in AUDIT.did.items()]
        pytest.fail(
            "this test needs its tier's marker (tests/tiers.py): "
            + "; ".join(lines)
            + f". Add @pytest.mark.{' / '.join(AUDIT.did)} to it or its module.",
            pytrace=False,
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Any:
    AUDIT.item = None
    yield


# `make test` (and so CI) installs every program a test needs and sets this: there, a missing
# one fails the test; a bare `pytest` on a laptop without it skips.
REQUIRE_TOOLS = "DOCQ_TESTS_REQUIRE_TOOLS"


def missing_tool(what: str, hint: str) -> None:
    """A program the test needs is not installed: skip, or fail where `make test` ran."""
    message = f"{what} is not installed ({hint})"
    if os.environ.get(REQUIRE_TOOLS):
        pytest.fail(f"{message}, and {REQUIRE_TOOLS} says this run must have it", pytrace=False)
    pytest.skip(message)
