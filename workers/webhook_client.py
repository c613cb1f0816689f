"""The HTTP client of webhook deliveries: one per process, and one deadline per attempt.

Why a deadline of its own: httpx's timeouts apply per phase (connect, each write, each
read), so a receiver that answers a byte every few seconds holds an attempt as long as it
likes; past the attempt's lease (claim_attempt.lua), another copy of the delivery may start
a second attempt beside it. Here every network operation of an attempt gets at most the
time left until the attempt's deadline (`within`), through httpcore's network backend, the
layer that opens sockets and reads them: the attempt ends at its deadline however the
receiver trickles, and the lease (longer) is never outlived. Name resolution runs within
the same deadline (`resolve_within`).

One client per process (workers/app.py makes it after fork, as it makes the job store) keeps
the TLS context, which costs more to build than a delivery's request. It keeps no
connection alive between attempts: a connection is pinned to a checked address and opened
with one receiver's name (SNI), so a pooled one could carry another receiver's request on
the same address under a certificate checked for the first.

    httpx.Client (timeouts per phase, no redirects, no proxy from the environment)
      └── DeadlineTransport (httpx's BaseTransport, httpcore's errors as httpx's)
            └── httpcore.ConnectionPool (no keep-alive)
                  └── _Backend / _Stream: each connect, TLS handshake, write and read
                      bounded by the time left to the attempt's deadline
"""

from __future__ import annotations

import contextlib
import contextvars
import queue
import threading
import time
import typing
from collections.abc import Callable, Iterable, Iterator

import httpcore
import httpx

# When the attempt running in this thread must end (time.monotonic()); None: no deadline.
_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "webhook_attempt_deadline", default=None
)


@contextlib.contextmanager
def within(deadline: float) -> Iterator[None]:
    """Bound every network operation of this thread, inside the block, by `deadline`."""
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


def _left(timeout: float | None, expired: type[httpcore.TimeoutException]) -> float | None:
    """The phase's own timeout, or the time left to the deadline when that is shorter."""
    deadline = _deadline.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise expired("the attempt's deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: typing.Any,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        left = _left(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, left))

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[typing.Any] | None = None,
    ) -> httpcore.NetworkStream:
        left = _left(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.connect_tcp(host, port, left, local_address, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


# httpcore's errors as httpx raises them (most specific first).
_ERRORS: list[tuple[type[Exception], type[httpx.TransportError]]] = [
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.ProtocolError, httpx.ProtocolError),
]


@contextlib.contextmanager
def _as_httpx(request: httpx.Request) -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        for theirs, ours in _ERRORS:
            if isinstance(exc, theirs):
                raise ours(str(exc), request=request) from exc
        raise


class _Body(httpx.SyncByteStream):
    def __init__(self, response: httpcore.Response, request: httpx.Request) -> None:
        self._response, self._request = response, request

    def __iter__(self) -> Iterator[bytes]:
        with _as_httpx(self._request):
            yield from self._response.iter_stream()

    def close(self) -> None:
        self._response.close()


class DeadlineTransport(httpx.BaseTransport):
    """httpx's transport over an httpcore pool whose every operation meets the deadline."""

    def __init__(self) -> None:
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_keepalive_connections=0,
            network_backend=_Backend(),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.SyncByteStream)
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _as_httpx(request):
            response = self._pool.handle_request(core)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_Body(response, request),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self._pool.close()


def make_client(timeout_s: float, transport: httpx.BaseTransport | None = None) -> httpx.Client:
    """The client deliveries share in a process; `transport`: a test's stand-in receiver."""
    return httpx.Client(
        timeout=timeout_s,
        follow_redirects=False,
        trust_env=False,  # no proxy from the environment: the guard checked this host
        transport=transport or DeadlineTransport(),
    )


def resolve_within(
    resolve: Callable[[str, int], list[str]], host: str, port: int, deadline: float
) -> list[str]:
    """`resolve(host, port)`, or TimeoutError once `deadline` passes first. The system
    resolver cannot be interrupted: a lookup that outlives its attempt finishes in its own
    daemon thread, and its answer is dropped."""
    answer: queue.SimpleQueue[tuple[list[str] | None, BaseException | None]] = queue.SimpleQueue()

    def run() -> None:
        try:
            answer.put((resolve(host, port), None))
        except BaseException as exc:  # handed to the caller, whatever it is
            answer.put((None, exc))

    threading.Thread(target=run, name="webhook-dns", daemon=True).start()
    try:
        addresses, error = answer.get(timeout=max(0.0, deadline - time.monotonic()))
    except queue.Empty:
        raise TimeoutError("no answer within the attempt's deadline") from None
    if error is not None:
        raise error
    assert addresses is not None
    return addresses
