"""The chaos run's webhook receiver: an HTTP server in a thread that verifies every
delivery's Standard Webhooks signature (`standardwebhooks`, as a client would) and counts
the deliveries it accepted per `webhook-id`. A few answers are 503, chosen by the run's
seed, so that retries happen while processes die."""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError


class VerifyingReceiver:
    """Accepts (200) verified deliveries, refuses (503) a seeded share of them, and answers
    401 to any whose signature does not verify."""

    def __init__(self, secret: str, refuse_share: float, seed: int) -> None:
        self.webhook = Webhook(secret)
        self.refuse_share = refuse_share
        self.rng = random.Random(seed)
        self.accepted: Counter[str] = Counter()  # webhook-id -> deliveries answered 200
        self.events: dict[str, str] = {}  # webhook-id -> event type
        self.refused = 0
        self.bad_signatures = 0
        self.lock = threading.Lock()

    def handle(self, headers: dict[str, str], body: bytes) -> int:
        try:
            event = self.webhook.verify(body, headers)
        except WebhookVerificationError:
            with self.lock:
                self.bad_signatures += 1
            return 401
        with self.lock:
            if self.rng.random() < self.refuse_share:
                self.refused += 1
                return 503
            webhook_id = headers["webhook-id"]
            self.accepted[webhook_id] += 1
            self.events[webhook_id] = str(event["type"])
        return 200

    @contextmanager
    def serve(self) -> Iterator[str]:
        """Listen on a free port of 127.0.0.1; yields the URL to give jobs."""
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                code = receiver.handle({k.lower(): v for k, v in self.headers.items()}, body)
                self.send_response(code)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/hooks/chaos"
        finally:
            server.shutdown()
            server.server_close()

    def summary(self) -> dict[str, object]:
        with self.lock:
            return json.loads(
                json.dumps(
                    {
                        "accepted": sum(self.accepted.values()),
                        "events": len(self.accepted),
                        "duplicated": {k: n for k, n in self.accepted.items() if n > 1},
                        "refused_503": self.refused,
                        "bad_signatures": self.bad_signatures,
                    }
                )
            )
