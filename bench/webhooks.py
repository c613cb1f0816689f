"""The webhook receiver of the chaos run and the fleet's client: an HTTP server in a thread
that verifies every delivery's Standard Webhooks signature (`standardwebhooks`, as a client
would) and counts the deliveries it accepted per `webhook-id`. The chaos run answers a few
503, chosen by its seed, so that retries happen while processes die; the fleet's client
writes each delivery down for its checker (`record`)."""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError


class VerifyingReceiver:
    """Accepts (200) verified deliveries, refuses (503) a seeded share of them, and answers
    401 to any whose signature does not verify. `record`, if given, is called with what
    each accepted delivery said, and with `bad_signature` for each refused as forged."""

    def __init__(
        self,
        secret: str,
        refuse_share: float = 0.0,
        seed: int = 0,
        record: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.webhook = Webhook(secret)
        self.record = record
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
            if self.record is not None:
                self.record({"bad_signature": True})
            return 401
        with self.lock:
            if self.rng.random() < self.refuse_share:
                self.refused += 1
                return 503
            webhook_id = headers["webhook-id"]
            self.accepted[webhook_id] += 1
            self.events[webhook_id] = str(event["type"])
        if self.record is not None:
            data = event["data"]
            self.record({
                "webhook_id": webhook_id,
                "type": event["type"],
                "job": data["id"],
                "status": data["status"],
                "done": data.get("progress", {}).get("documents_done"),
            })  # fmt: skip
        return 200

    @contextmanager
    def serve(self, address: str = "127.0.0.1", path: str = "/hooks/chaos") -> Iterator[str]:
        """Listen on a free port of `address`; yields the URL to give jobs."""
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

        server = ThreadingHTTPServer((address, 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://{address}:{server.server_address[1]}{path}"
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
