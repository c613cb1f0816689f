"""A worker's gRPC channel finds a restarted Triton within about a second (docq/catalog.py's
CHANNEL_ARGS), not after gRPC's default reconnect backoff.

gRPC backs off reconnecting a channel whose server died (1 s, then x1.6 each attempt, up to
two minutes): with one Triton endpoint, whose channel is never replaced, a server down for
10 s was next tried ~16 s after it died, and every shard waited those extra seconds (the
chaos run's Triton kills cost 10-16 s each). A real gRPC server speaking Triton's
ServerReady stands in for tritonserver here: what is tested is the channel, not Triton.
While it is down, a bare TCP listener on its port counts the channel's connection attempts
(accepting, then closing each): how often it tries is what the backoff decides.
"""

from __future__ import annotations

import socket
import threading
import time
from concurrent import futures
from typing import Any

import grpc
import pytest
from tritonclient.grpc import service_pb2, service_pb2_grpc

from devstack.services import free_port
from docq.catalog import triton_client

pytestmark = pytest.mark.slow  # ~15 s of waiting on a dead port

DOWN_S = 10.0


class _Ready(service_pb2_grpc.GRPCInferenceServiceServicer):
    def ServerReady(self, request: Any, context: Any) -> Any:
        return service_pb2.ServerReadyResponse(ready=True)


def serve(port: int) -> grpc.Server:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    service_pb2_grpc.add_GRPCInferenceServiceServicer_to_server(_Ready(), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    return server


class Refuser:
    """A dead server's port, as a channel sees it, counting its connection attempts."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_server(("127.0.0.1", port))
        self.sock.settimeout(0.2)
        self.attempts = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.attempts += 1
            conn.close()

    def close(self) -> None:
        self.stopped.set()
        self.thread.join()
        self.sock.close()


def ready(client: Any) -> bool:
    try:
        return bool(client.is_server_ready(client_timeout=0.5))
    except Exception:
        return False


def test_a_channel_reconnects_within_seconds_of_its_server_coming_back() -> None:
    port = free_port()
    server = serve(port)
    client = triton_client(f"127.0.0.1:{port}")
    try:
        assert ready(client)
        server.stop(grace=None)
        dead = Refuser(port)
        down_until = time.monotonic() + DOWN_S
        while time.monotonic() < down_until:  # tried as the worker does: it fails fast
            assert not ready(client)
            time.sleep(0.2)
        dead.close()
        # About one attempt a second (the cap), ~10; gRPC's defaults make 4 (after 1, 2.6,
        # 5.2 and 9.3 s) and the next only ~16 s after the death.
        assert dead.attempts >= 7, f"{dead.attempts} connection attempts in {DOWN_S:g} s"
        server = serve(port)
        deadline = time.monotonic() + 30
        while not ready(client):  # and it is back, on the same channel
            assert time.monotonic() < deadline, "the channel never reconnected"
            time.sleep(0.05)
    finally:
        client.close()
        server.stop(grace=None)
