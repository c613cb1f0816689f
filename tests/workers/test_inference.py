"""workers/inference.py: endpoint choice and failover, with fake Triton servers at the gRPC edge.

The fakes stand in for tritonclient's InferenceServerClient only: the real choice of an
endpoint, failover, health checks and metrics run, as in a worker process.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from prometheus_client import REGISTRY
from tritonclient.utils import InferenceServerException

from docq.errors import DocqError, InferenceUnavailable, ModelError
from docq.models import ModelSpec
from docq.text.packing import Batch, pack
from docq.text.windowing import Window
from workers.inference import TritonInference

LABELS = ("a", "b")


def spec(name: str = "m") -> ModelSpec:
    return ModelSpec(
        name=name,
        max_batch_size=8,
        max_seq_len=16,
        stride=2,
        aggregation="mean",
        labels=LABELS,
        tokenizer_dir=Path("."),
        runtime="test",
    )


def batch(tag: int) -> Batch:
    ids = np.full(5, 7, dtype=np.int64)
    ids[1] = tag
    (b,) = pack([Window(doc=0, ids=ids)], 8, pad_id=0)
    return b


class _Result:
    def __init__(self, logits: npt.NDArray[np.float32]) -> None:
        self.logits = logits

    def as_numpy(self, name: str) -> npt.NDArray[np.float32]:
        return self.logits


class FakeServer:
    """One Triton endpoint: answers, holds back or refuses requests like the real one."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.lock = threading.Lock()
        self.alive = True
        self.hold = False
        self.models_missing: set[str] = set()
        self.invalid = False
        self.deadline = False  # answers DEADLINE_EXCEEDED (alive, but too slow)
        self.served: list[int] = []  # tag of each batch answered
        self.held: list[Callable[[], None]] = []
        self.clients = 0  # channels opened to it
        self.slow_probes = 0  # health checks to time out before answering again
        self.closed_with_requests = 0  # requests on a channel that was closed under them

    def answer(self, model: str, tag: int, callback: Callable[..., None]) -> None:
        if not self.alive:
            callback(None, InferenceServerException("failed to connect", "StatusCode.UNAVAILABLE"))
        elif model in self.models_missing:
            err = InferenceServerException(
                f"Request for unknown model: '{model}' has no available versions",
                "StatusCode.UNAVAILABLE",
            )
            callback(None, err)
        elif self.invalid:
            callback(None, InferenceServerException("bad shape", "StatusCode.INVALID_ARGUMENT"))
        elif self.deadline:
            err = InferenceServerException("Deadline Exceeded", "StatusCode.DEADLINE_EXCEEDED")
            callback(None, err)
        else:
            with self.lock:
                self.served.append(tag)
            callback(_Result(np.array([[tag, 0.0]], dtype=np.float32)), None)

    def die(self) -> None:
        """SIGKILL: held requests fail as their connection drops, new ones are refused."""
        self.alive = False
        with self.lock:
            held, self.held = self.held, []
        for answer in held:
            answer()


class FakeClient:
    """tritonclient.grpc.InferenceServerClient as far as TritonInference uses it."""

    def __init__(self, server: FakeServer) -> None:
        self.server = server
        server.clients += 1

    def async_infer(self, model_name: str, inputs: Any, callback: Any, **kw: Any) -> None:
        tag = int(np.frombuffer(inputs[0]._raw_content, dtype=np.int64)[1])  # row 0, token 1
        call = lambda: self.server.answer(model_name, tag, callback)  # noqa: E731
        if self.server.hold and self.server.alive:
            with self.server.lock:
                self.server.held.append(call)
            return
        call()

    def is_server_ready(self, headers: Any = None, client_timeout: Any = None) -> bool:
        if not self.server.alive:
            raise InferenceServerException("failed to connect", "StatusCode.UNAVAILABLE")
        if self.server.slow_probes:
            self.server.slow_probes -= 1
            raise InferenceServerException("Deadline Exceeded", "StatusCode.DEADLINE_EXCEEDED")
        return True

    def close(self) -> None:
        # gRPC fails what is still in flight on a closed channel: so do the fakes
        self.server.closed_with_requests += len(self.server.held)


class Answers:
    """Collects what `done` was called with, per batch tag; each must come exactly once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.got: dict[int, list[tuple[Any, DocqError | None]]] = {}

    def done(self, tag: int) -> Callable[[Any, DocqError | None], None]:
        def call(logits: Any, error: DocqError | None) -> None:
            with self.lock:
                self.got.setdefault(tag, []).append((logits, error))

        return call

    def once(self, tag: int) -> tuple[Any, DocqError | None]:
        assert len(self.got.get(tag, [])) == 1, f"batch {tag} answered {self.got.get(tag)}"
        return self.got[tag][0]


def pool(*names: str, hold_s: float = 0.0) -> tuple[TritonInference, dict[str, FakeServer]]:
    servers = {n: FakeServer(n) for n in names}
    triton = TritonInference(
        list(names),
        max_in_flight=8,
        timeout_s=5,
        health_interval_s=3600,  # health checks run when the test calls check_health()
        hold_s=hold_s,
        resend_interval_s=0.02,
        client_factory=lambda url: FakeClient(servers[url]),  # type: ignore[return-value]
    )
    return triton, servers


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_each_batch_goes_to_the_endpoint_with_the_fewest_requests_in_flight() -> None:
    triton, servers = pool("a:1", "b:1")
    for s in servers.values():
        s.hold = True
    answers = Answers()
    for tag in range(4):
        triton.submit(spec(), batch(tag), 0, answers.done(tag))
    assert [len(s.held) for s in servers.values()] == [2, 2]
    # a's two answers come back: a has none in flight, b two; the next two go to a
    for answer in servers["a:1"].held[:]:
        answer()
    servers["a:1"].held.clear()
    for tag in (4, 5):
        triton.submit(spec(), batch(tag), 0, answers.done(tag))
    assert len(servers["a:1"].held) == 2 and len(servers["b:1"].held) == 2
    triton.close()


def test_batches_in_flight_on_a_dead_endpoint_are_answered_by_another_once() -> None:
    triton, servers = pool("a:2", "b:2")
    a, b = servers["a:2"], servers["b:2"]
    a.hold = b.hold = True
    answers = Answers()
    errors_before = sample(
        "docq_triton_request_errors_total", endpoint="a:2", model="m", reason="unavailable"
    )
    for tag in range(6):
        triton.submit(spec(), batch(tag), 0, answers.done(tag))
    assert len(a.held) == 3 and len(b.held) == 3
    a.die()  # a's three requests fail as its connection drops, and go to b
    assert len(b.held) == 6 and not answers.got
    b.hold = False
    for answer in b.held:
        answer()
    for tag in range(6):
        logits, error = answers.once(tag)
        assert error is None and logits[0, 0] == tag
    assert sorted(b.served) == list(range(6)) and a.served == []
    assert sample("docq_triton_endpoint_up", endpoint="a:2") == 0
    assert (
        sample("docq_triton_request_errors_total", endpoint="a:2", model="m", reason="unavailable")
        == errors_before + 3
    )
    # a is left: new batches go to b only
    triton.submit(spec(), batch(9), 0, answers.done(9))
    assert answers.once(9)[1] is None and 9 in b.served
    triton.close()


def test_a_dead_endpoint_is_taken_back_when_its_health_check_passes() -> None:
    triton, servers = pool("a:3", "b:3")
    a = servers["a:3"]
    a.die()
    answers = Answers()
    triton.submit(spec(), batch(1), 0, answers.done(1))  # refused at a, answered by b
    assert answers.once(1)[1] is None
    triton.check_health()  # still dead
    assert sample("docq_triton_endpoint_up", endpoint="a:3") == 0
    channels = a.clients
    a.alive = True  # restarted
    triton.check_health()
    assert a.clients == channels + 1  # a fresh channel, not the one gRPC backs off on
    assert sample("docq_triton_endpoint_up", endpoint="a:3") == 1
    for tag in range(2, 6):
        triton.submit(spec(), batch(tag), 0, answers.done(tag))
    assert len(a.served) == 2  # shares the load again
    triton.close()


def test_a_model_one_endpoint_does_not_serve_is_routed_around_without_leaving_it() -> None:
    triton, servers = pool("a:4", "b:4")
    a, b = servers["a:4"], servers["b:4"]
    a.models_missing = {"other"}
    answers = Answers()
    for tag in range(4):
        triton.submit(spec("other"), batch(tag), 0, answers.done(tag))
    assert all(answers.once(t)[1] is None for t in range(4))
    assert sorted(b.served) == [0, 1, 2, 3]
    assert sample("docq_triton_endpoint_up", endpoint="a:4") == 1
    triton.submit(spec("m"), batch(7), 0, answers.done(7))
    triton.submit(spec("m"), batch(8), 0, answers.done(8))
    assert a.served  # a still serves the models it has
    triton.close()


def test_with_every_endpoint_down_a_batch_fails_once_and_retryably() -> None:
    triton, servers = pool("a:5", "b:5")
    for s in servers.values():
        s.die()
    answers = Answers()
    triton.submit(spec(), batch(1), 0, answers.done(1))
    logits, error = answers.once(1)
    assert logits is None and isinstance(error, InferenceUnavailable)
    triton.close()


def test_an_invalid_request_is_not_sent_elsewhere() -> None:
    triton, servers = pool("a:6", "b:6")
    for s in servers.values():
        s.invalid = True
    answers = Answers()
    triton.submit(spec(), batch(1), 0, answers.done(1))
    assert isinstance(answers.once(1)[1], ModelError)
    assert (
        sum(
            sample("docq_triton_request_errors_total", endpoint=u, model="m", reason="invalid")
            for u in ("a:6", "b:6")
        )
        == 1
    )
    triton.close()


def test_one_endpoint_behaves_as_before() -> None:
    triton, servers = pool("a:7")
    answers = Answers()
    servers["a:7"].die()
    triton.submit(spec(), batch(1), 0, answers.done(1))
    assert isinstance(answers.once(1)[1], InferenceUnavailable)
    servers["a:7"].alive = True  # no health check needed: the one endpoint is always tried
    triton.submit(spec(), batch(2), 0, answers.done(2))
    assert answers.once(2)[1] is None
    assert triton.infer(spec(), [batch(3), batch(4)])[1][0, 0] == 4
    triton.close()


@pytest.mark.parametrize("n", [2, 3])
def test_latency_is_recorded_per_endpoint_and_model(n: int) -> None:
    names = [f"lat{n}-{i}:1" for i in range(n)]
    triton, _ = pool(*names)
    before = [sample("docq_triton_request_seconds_count", endpoint=u, model="m") for u in names]
    triton.infer(spec(), [batch(t) for t in range(2 * n)])
    after = [sample("docq_triton_request_seconds_count", endpoint=u, model="m") for u in names]
    assert [x - y for x, y in zip(after, before, strict=True)] == [2] * n
    triton.close()


def test_a_slow_health_check_neither_leaves_an_endpoint_nor_cuts_its_requests() -> None:
    triton, servers = pool("a:8", "b:8")
    a = servers["a:8"]
    a.hold = servers["b:8"].hold = True
    answers = Answers()
    for tag in range(4):
        triton.submit(spec(), batch(tag), 0, answers.done(tag))
    a.slow_probes = 1  # a busy host answers one check too late
    triton.check_health()
    assert sample("docq_triton_endpoint_up", endpoint="a:8") == 1
    a.slow_probes = 3  # twice in a row: left; and a third time
    triton.check_health()
    triton.check_health()
    assert sample("docq_triton_endpoint_up", endpoint="a:8") == 0
    channels = a.clients
    triton.check_health()  # requests still on a's channel: it is kept, not replaced
    assert a.clients == channels and a.closed_with_requests == 0
    for s in servers.values():
        for answer in s.held:
            answer()
        s.held.clear()
    assert all(answers.once(t)[1] is None for t in range(4))
    triton.check_health()  # nothing in flight any more: a fresh channel, and a is back
    assert a.clients == channels + 1
    assert sample("docq_triton_endpoint_up", endpoint="a:8") == 1
    triton.close()


# --- waiting for a restarted server (DOCQ_TRITON_HOLD_S) -----------------------------


def answered_within(answers: Answers, tag: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with answers.lock:
            if tag in answers.got:
                return True
        time.sleep(0.01)
    return False


def test_a_batch_waits_for_its_one_server_to_come_back_instead_of_failing() -> None:
    triton, servers = pool("a:20", hold_s=30)
    a = servers["a:20"]
    a.die()
    held_before = sample("docq_triton_batches_held_total", model="m")
    answers = Answers()
    triton.submit(spec(), batch(1), 0, answers.done(1))
    assert not answered_within(answers, 1, 0.3)  # it waits, sent again every interval
    assert sample("docq_triton_batches_held_total", model="m") > held_before
    a.alive = True  # the supervisor restarted it
    assert answered_within(answers, 1, 5)
    logits, error = answers.once(1)
    assert error is None and logits[0, 0] == 1 and a.served == [1]
    time.sleep(0.1)
    answers.once(1)  # and only once
    triton.close()


def test_a_held_batch_fails_retryably_once_the_hold_is_spent() -> None:
    triton, servers = pool("a:21", hold_s=0.2)
    servers["a:21"].die()
    answers = Answers()
    started = time.monotonic()
    triton.submit(spec(), batch(1), 0, answers.done(1))
    assert answered_within(answers, 1, 5)
    assert time.monotonic() - started >= 0.15  # it waited its hold, then gave up
    logits, error = answers.once(1)
    assert logits is None and isinstance(error, InferenceUnavailable)
    time.sleep(0.1)
    answers.once(1)
    triton.close()


def test_with_every_endpoint_down_a_held_batch_goes_to_the_first_one_back() -> None:
    triton, servers = pool("a:22", "b:22", hold_s=30)
    a, b = servers["a:22"], servers["b:22"]
    a.die()
    b.die()
    answers = Answers()
    triton.submit(spec(), batch(1), 0, answers.done(1))  # refused by both: both left
    assert not answered_within(answers, 1, 0.2)
    b.alive = True
    triton.check_health()  # b is taken back
    assert answered_within(answers, 1, 5)
    assert answers.once(1)[1] is None and b.served == [1] and a.served == []
    triton.close()


def test_a_timed_out_batch_is_not_held() -> None:
    # the server is alive and may have computed it: the shard's retry decides, at once
    triton, servers = pool("a:23", hold_s=30)
    servers["a:23"].deadline = True
    answers = Answers()
    triton.submit(spec(), batch(1), 0, answers.done(1))
    assert answered_within(answers, 1, 0.5)
    assert isinstance(answers.once(1)[1], InferenceUnavailable)
    triton.close()


def test_closing_answers_every_held_batch_once() -> None:
    triton, servers = pool("a:24", hold_s=30)
    servers["a:24"].die()
    answers = Answers()
    for tag in range(3):
        triton.submit(spec(), batch(tag), 0, answers.done(tag))
    assert not answered_within(answers, 0, 0.1)
    triton.close()
    time.sleep(0.1)  # a resend that was due as it closed must not answer again
    for tag in range(3):
        logits, error = answers.once(tag)
        assert logits is None and isinstance(error, InferenceUnavailable)
