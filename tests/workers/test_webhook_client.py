"""workers.webhook_client through workers.webhooks.deliver: one deadline per attempt, held
against a real receiver on a real socket that trickles its answer byte by byte (httpx's own
timeouts, per phase, never fire on it), and the attempt's lease never outlived."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx
import pytest

from docq.jobs import DeliveryState
from docq.store import Document, JobStore, WebhookTarget
from docq.webhook_guard import generate_secret
from workers import webhook_client
from workers.webhooks import DeliveryPolicy, deliver

ANSWER = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok"
BYTE_EVERY_S = 0.2  # far below the per-phase timeout: only a deadline for the whole ends it
POLICY = DeliveryPolicy(
    timeout_s=1.5,
    max_attempts=5,
    backoff_s=60.0,
    backoff_max_s=60.0,
    allow_private_networks=True,  # the receiver is on 127.0.0.1
    inline_results_max_bytes=0,
)


@dataclass
class Trickler:
    """A receiver that reads the request, then writes its answer one byte at a time."""

    port: int = 0
    sent: list[int] = field(default_factory=list)  # bytes written per connection
    cut_off: list[bool] = field(default_factory=list)  # whether the sender left first
    connected: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(30)
            request = b""
            while b"\r\n\r\n" not in request:
                request += conn.recv(65536)
            self.connected.set()
            sent = 0
            try:
                for byte in ANSWER:
                    conn.sendall(bytes([byte]))
                    sent += 1
                    time.sleep(BYTE_EVERY_S)
                cut = False
            except OSError:  # the sender closed the connection
                cut = True
            self.sent.append(sent)
            self.cut_off.append(cut)
            self.finished.set()

    @contextmanager
    def serve(self) -> Iterator[str]:
        listener = socket.create_server(("127.0.0.1", 0))
        self.port = listener.getsockname()[1]
        stop = threading.Event()

        def accept() -> None:
            listener.settimeout(0.1)
            while not stop.is_set():
                try:
                    conn, _ = listener.accept()
                except TimeoutError:
                    continue
                threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        try:
            yield f"http://hooks.test:{self.port}/hook"
        finally:
            stop.set()
            thread.join(5)
            listener.close()


def loopback(host: str, port: int) -> list[str]:
    return ["127.0.0.1"]


def final_job(store: JobStore, url: str) -> str:
    job = store.create_job(
        "doc-type", [Document("a", "text")], webhook=WebhookTarget(url, generate_secret())
    )
    result = {"id": "a", "label": "invoice", "scores": {"invoice": 1.0}, "windows": 1}
    assert store.finish_shard(job.id, 0, [(0, result)]).performed
    return job.id


def test_a_trickling_receiver_is_cut_off_at_the_deadline_and_no_twin_starts_meanwhile(
    store: JobStore,
) -> None:
    trickler = Trickler()
    with trickler.serve() as url, webhook_client.make_client(POLICY.timeout_s) as client:
        job_id = final_job(store, url)
        outcome: list[object] = []
        first = threading.Thread(
            target=lambda: outcome.append(
                deliver(store, POLICY, job_id, "chain", client=client, resolve=loopback)
            )
        )
        first.start()
        assert trickler.connected.wait(30)
        # a second copy of the same delivery, while the first holds its lease: it must not send
        twin = deliver(store, POLICY, job_id, "chain", client=client, resolve=loopback)
        lease_until = store.deliveries.progress(job_id).busy_until
        first.join(60)
        finished_at = time.time()
        assert trickler.finished.wait(30)
    assert twin.state is None and "mid-attempt" in twin.reason
    [result] = outcome
    assert isinstance(result, type(twin))
    assert result.state is DeliveryState.PENDING
    assert "deadline" in result.reason
    # the receiver was left mid-answer: the trickle would have delivered it in the end
    assert trickler.cut_off == [True] and trickler.sent[0] < len(ANSWER)
    assert len(trickler.sent) == 1  # one connection: the twin sent nothing
    # the attempt was over and recorded while its lease still held
    assert lease_until > finished_at
    [attempt] = store.deliveries.webhook_attempts(job_id)
    assert attempt.status_code is None


def test_an_unreachable_address_gives_way_to_the_next_checked_one(store: JobStore) -> None:
    """Every address the name resolves to was checked; the first refuses connections (nothing
    listens on 127.0.0.2 at the receiver's port), the second answers."""
    received: list[httpx.Request] = []
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def answer() -> None:
            conn, _ = listener.accept()
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                received.append(httpx.Request("POST", "http://x/"))
                conn.sendall(b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n")

        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        job_id = final_job(store, f"http://hooks.test:{port}/hook")
        outcome = deliver(
            store, POLICY, job_id, "chain", resolve=lambda h, p: ["127.0.0.2", "127.0.0.1"]
        )
        thread.join(10)
    assert outcome.state is DeliveryState.DELIVERED
    assert len(received) == 1


def test_name_resolution_counts_against_the_deadline() -> None:
    release = threading.Event()

    def stuck(host: str, port: int) -> list[str]:
        release.wait(30)
        return ["127.0.0.1"]

    with pytest.raises(TimeoutError):
        webhook_client.resolve_within(stuck, "hooks.test", 80, time.monotonic() + 0.2)
    release.set()
    assert webhook_client.resolve_within(stuck, "h", 80, time.monotonic() + 5) == ["127.0.0.1"]
