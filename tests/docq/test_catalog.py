"""docq/catalog.py over several Triton endpoints, with fake servers at the gRPC edge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tritonclient.utils import InferenceServerException

from docq.catalog import ModelCatalog
from docq.errors import InferenceUnavailable, UnknownModel
from docq.model_control import ModelState, Policy


class FakeTriton:
    """One server's model repository: which models exist and which are loaded."""

    def __init__(self, models: set[str], loaded: set[str]) -> None:
        self.models, self.loaded = models, set(loaded)
        self.alive = True
        self.loads: list[str] = []


class FakeClient:
    """The calls the catalogue and model control make, answered from a FakeTriton."""

    def __init__(self, server: FakeTriton) -> None:
        self.s = server

    def _up(self) -> None:
        if not self.s.alive:
            raise InferenceServerException("failed to connect", "StatusCode.UNAVAILABLE")

    def is_server_ready(self, **_: Any) -> bool:
        self._up()
        return True

    def is_model_ready(self, name: str, **_: Any) -> bool:
        self._up()
        return name in self.s.loaded

    def get_model_repository_index(self, **_: Any) -> dict[str, Any]:
        self._up()
        return {
            "models": [
                {"name": m, "version": "1", "state": "READY" if m in self.s.loaded else ""}
                for m in sorted(self.s.models)
            ]
        }

    def load_model(self, name: str, **_: Any) -> None:
        self._up()
        self.s.loads.append(name)
        self.s.loaded.add(name)

    def get_inference_statistics(self, **_: Any) -> dict[str, Any]:
        return {"model_stats": []}

    def close(self) -> None:
        pass


def catalog(*servers: FakeTriton) -> ModelCatalog:
    by_url = {f"t{i}:8001": s for i, s in enumerate(servers)}
    return ModelCatalog(
        list(by_url),
        Path("."),
        policy=Policy(explicit=True),
        client_factory=lambda url: FakeClient(by_url[url]),  # type: ignore[arg-type,return-value]
    )


def test_a_model_is_loaded_on_every_endpoint_that_lacks_it() -> None:
    a, b = FakeTriton({"m", "n"}, {"m", "n"}), FakeTriton({"m", "n"}, {"m"})
    catalog(a, b).ensure_ready("n")
    assert a.loads == [] and b.loads == ["n"]


def test_an_unreachable_endpoint_is_routed_around_and_reached_again_later() -> None:
    a, b = FakeTriton({"m"}, set()), FakeTriton({"m"}, set())
    a.alive = False
    c = catalog(a, b)
    c.ensure_ready("m")  # served by b: no error
    assert b.loads == ["m"]
    assert c.endpoints_ready() == {"t0:8001": False, "t1:8001": True}
    assert c.server_ready()
    a.alive = True  # back: the next shard loads the model there too (a fresh channel)
    c.ensure_ready("m")
    assert a.loads == ["m"]


def test_no_endpoint_serving_the_model_is_a_retryable_error() -> None:
    a, b = FakeTriton({"m"}, set()), FakeTriton({"m"}, set())
    a.alive = b.alive = False
    c = catalog(a, b)
    with pytest.raises(InferenceUnavailable):
        c.ensure_ready("m")
    assert not c.server_ready()


def test_an_unknown_model_is_unknown_whichever_endpoint_answers() -> None:
    a, b = FakeTriton({"m"}, {"m"}), FakeTriton({"m"}, {"m"})
    a.alive = False
    with pytest.raises(UnknownModel):
        catalog(a, b).ensure_ready("nope")


def test_statuses_show_each_model_at_its_best_endpoint() -> None:
    a, b = FakeTriton({"m", "n"}, {"m"}), FakeTriton({"m", "n"}, {"n"})
    statuses = catalog(a, b).statuses()
    assert statuses["m"].state is ModelState.READY and statuses["n"].state is ModelState.READY
    b.alive = False
    assert catalog(a, b).statuses()["n"].state is ModelState.AVAILABLE
