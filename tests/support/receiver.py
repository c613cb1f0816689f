"""A real webhook receiver for tests: an HTTP server on 127.0.0.1 in a thread, answering each
POST with the next step of a script (a status code, or "hang" past the attempt timeout)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HANG = "hang"
Step = int | str


@dataclass(frozen=True)
class Received:
    """One request as the receiver saw it."""

    headers: dict[str, str]
    body: bytes
    answered: int | None  # None when the receiver hung and the sender gave up


class Receiver:
    """Records every request; `script` is consumed one step per request, the last repeats."""

    def __init__(self, *script: Step) -> None:
        self.script = list(script) or [200]
        self.requests: list[Received] = []
        self._lock = threading.Condition()
        self._release = threading.Event()
        self._server: ThreadingHTTPServer | None = None

    def _next(self) -> Step:
        with self._lock:
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    def _record(self, received: Received) -> None:
        with self._lock:
            self.requests.append(received)
            self._lock.notify_all()

    @property
    def accepted(self) -> list[Received]:
        return [r for r in self.requests if r.answered is not None and 200 <= r.answered < 300]

    def wait_for(self, check: Callable[[list[Received]], bool], timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        with self._lock:
            while not check(self.requests):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"receiver saw {len(self.requests)} requests")
                self._lock.wait(left)

    @contextmanager
    def serve(self, port: int = 0) -> Iterator[str]:
        """Listen on 127.0.0.1:`port` (0: a free one) and yield the URL to give a job."""
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                headers = {k.lower(): v for k, v in self.headers.items()}
                step = receiver._next()
                if step == HANG:
                    receiver._record(Received(headers, body, None))
                    receiver._release.wait(30)  # far past the attempt timeout
                    return
                assert isinstance(step, int)
                receiver._record(Received(headers, body, step))
                self.send_response(step)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self._server = server
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/hooks/docq"
        finally:
            self._release.set()
            server.shutdown()
            server.server_close()
            thread.join(10)
