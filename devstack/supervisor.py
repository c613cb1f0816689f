"""The stack's processes under a supervisor, as Kubernetes runs a pod's containers
(`restartPolicy: Always`) and compose's `restart:` does: each process started in a session
of its own (so that a SIGKILL of its group takes its children: prefork pools, Triton's
stubs), its starts counted, and started again when it ends by itself (a Celery worker exits,
code 1, on an error it does not recover from). The fleet (devstack/fleet/fleet.py) and the
chaos run (bench/faults/chaos.py) both run their processes under one.

A process is named by a key, (host, name); a key in `kept_down` is down on purpose (its host
lost, or killed by the chaos with its restart already scheduled) and is not started again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from devstack.stack import REPO

log = logging.getLogger("supervisor")

Key = tuple[str, str]  # (host, name)


class Supervisor:
    """Starts processes, kills them, and starts again those that end by themselves."""

    def __init__(self) -> None:
        self.procs: dict[Key, subprocess.Popen[bytes]] = {}
        self.starts: dict[Key, int] = {}
        self.kept_down: set[Key] = set()
        self.restarts: list[dict[str, object]] = []  # what ended by itself, started again
        self.lock = threading.RLock()
        self.stopping = threading.Event()

    def spawn(
        self, key: Key, argv: Sequence[str], env: dict[str, str], log_path: Path
    ) -> subprocess.Popen[bytes]:
        """Start `argv` as `key`'s process, its output appended to `log_path`; no wait."""
        with self.lock, log_path.open("ab") as out:
            proc = subprocess.Popen(
                list(argv),
                cwd=REPO,
                env={**os.environ, **env},
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            self.procs[key] = proc
            self.starts[key] = self.starts.get(key, 0) + 1
            self.kept_down.discard(key)
        return proc

    def kill(self, key: Key) -> None:
        """SIGKILL `key`'s process and everything in its session (no graceful anything);
        it stays down until started again."""
        with self.lock:
            self.kept_down.add(key)
            proc = self.procs[key]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(30)

    def exited(self) -> list[tuple[str, str, int]]:
        """Processes that ended, killed or not: (host, name, code)."""
        with self.lock:
            procs = list(self.procs.items())
        return [(*key, rc) for key, proc in procs if (rc := proc.poll()) is not None]

    def supervise(
        self,
        every_s: float,
        restart: Callable[[str, str], object],
        wanted: Callable[[str, str], bool] = lambda host, name: True,
    ) -> None:
        """In a thread: every `every_s`, `restart(host, name)` each `wanted` process that
        ended by itself (not `kept_down`), recorded in `restarts`, until `stop_supervising`."""

        def loop() -> None:
            while not self.stopping.wait(every_s):
                with self.lock:
                    for host, name, code in self.exited():
                        if (host, name) in self.kept_down or not wanted(host, name):
                            continue
                        log.warning("%s on %s ended (%d): starting it again", name, host, code)
                        self.restarts.append(
                            {"host": host, "name": name, "code": code, "at": time.time()}
                        )
                        self.kept_down.add((host, name))  # until `restart` starts it
                        restart(host, name)

        self.stopping.clear()
        threading.Thread(target=loop, name="supervisor", daemon=True).start()

    def stop_supervising(self) -> None:
        """What is stopped from now on stays stopped."""
        self.stopping.set()


def triton_ready(url: str) -> bool:
    """A readiness probe: the tritonserver at `url` (gRPC) serves the demo model."""
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(url)
    try:
        return bool(client.is_server_ready()) and bool(client.is_model_ready("doc-type"))
    finally:
        client.close()
