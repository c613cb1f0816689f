"""docq/model_control.py: states, the LRU choice, and loads/unloads on a real tritonserver."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import tritonclient.grpc as grpcclient
from prometheus_client import REGISTRY

from conversion import convert
from devstack.services import LoadFailed, triton_server, wait_for
from docq.config import Settings
from docq.errors import InferenceUnavailable, UnknownModel
from docq.model_control import (
    ModelControl,
    ModelState,
    ModelStatus,
    Policy,
    choose_unloads,
    statuses,
)
from serving.server import server_command, startup_models

# The module's repository fixture converts two tiny models (tests/tiers.py: build).
pytestmark = pytest.mark.build

# --- the state of each model, folded from Triton's repository index -------------------


def test_statuses_fold_the_index_into_one_state_per_model() -> None:
    index = [
        {"name": "never"},
        {"name": "ready", "version": "1", "state": "READY"},
        {"name": "gone", "version": "1", "state": "UNAVAILABLE", "reason": "unloaded"},
        {"name": "broken", "version": "1", "state": "UNAVAILABLE", "reason": "bad onnx"},
        {"name": "busy", "version": "3", "state": "LOADING"},
        {"name": "new", "version": "1", "state": "UNAVAILABLE", "reason": "unloaded"},
        {"name": "new", "version": "2", "state": "READY"},
        {"name": "both", "version": "2", "state": "READY"},
        {"name": "both", "version": "3", "state": "LOADING"},
    ]
    assert statuses(index) == {
        "never": ModelStatus("never", ModelState.AVAILABLE, None),
        "ready": ModelStatus("ready", ModelState.READY, "1"),
        "gone": ModelStatus("gone", ModelState.UNLOADED, "1"),
        "broken": ModelStatus("broken", ModelState.FAILED, "1", "bad onnx"),
        "busy": ModelStatus("busy", ModelState.LOADING, "3"),
        "new": ModelStatus("new", ModelState.READY, "2"),
        # a new version loading while the old one serves: still ready, on the old version
        "both": ModelStatus("both", ModelState.READY, "2"),
    }


# --- which models make room -----------------------------------------------------------

NOW = 1_000_000_000


def _choose(policy: Policy, used: dict[str, int], keep: str = "new", **sizes: float) -> list[str]:
    return choose_unloads(used, keep, used, sizes, policy, NOW)


def test_least_recently_used_goes_first() -> None:
    used = {"a": NOW - 50_000, "b": NOW - 90_000, "c": NOW - 70_000}
    assert _choose(Policy(max_loaded=3, idle_s=0), used) == ["b"]
    assert _choose(Policy(max_loaded=1, idle_s=0), used) == ["b", "c", "a"]


def test_pinned_models_and_the_one_needed_are_never_unloaded() -> None:
    used = {"a": NOW - 90_000, "b": NOW - 50_000, "new": 0}
    policy = Policy(pinned=frozenset({"a"}), max_loaded=1, idle_s=0)
    assert _choose(policy, used) == ["b"]  # over the cap still: a is pinned, new is needed


def test_models_in_use_are_kept_over_the_cap() -> None:
    used = {"a": NOW - 10_000, "b": NOW - 90_000}
    assert _choose(Policy(max_loaded=1, idle_s=30), used) == ["b"]  # a answered 10 s ago


def test_memory_budget_unloads_until_the_files_fit() -> None:
    used = {"a": NOW - 90_000, "b": NOW - 80_000}
    policy = Policy(memory_budget_mb=250, idle_s=0)
    assert _choose(policy, used, a=100.0, b=100.0, new=100.0) == ["a"]
    assert _choose(policy, used, a=10.0, b=10.0, new=100.0) == []


def test_no_cap_and_no_budget_unloads_nothing() -> None:
    assert _choose(Policy(idle_s=0), {"a": 0, "b": 0}) == []


# --- settings and launcher ------------------------------------------------------------


def test_policy_and_startup_list_come_from_the_settings() -> None:
    s = Settings(
        model_control="explicit",
        model_startup="doc-lang, doc-type",
        model_pinned="doc-type,extra",
        model_max_loaded=3,
        model_memory_budget_mb=512,
        model_idle_s=5,
    )
    assert s.startup_models == ("doc-lang", "doc-type", "extra")
    assert Policy.from_settings(s) == Policy(
        explicit=True,
        pinned=frozenset({"doc-type", "extra"}),
        max_loaded=3,
        memory_budget_mb=512,
        idle_s=5,
    )
    assert not Policy.from_settings(Settings(model_control="none")).explicit
    with pytest.raises(ValueError, match="model_control"):
        Settings(model_control="lazy")


def test_launcher_loads_the_startup_models_the_repository_holds(tmp_path: Path) -> None:
    (tmp_path / "doc-type").mkdir()
    (tmp_path / "doc-type" / "config.pbtxt").write_text("")
    assert startup_models(tmp_path, ("doc-type", "missing")) == ["doc-type"]
    cmd = server_command(tmp_path, 1, 2, 3, model_control="explicit", load=["doc-type"])
    assert "--model-control-mode=explicit" in cmd and "--load-model=doc-type" in cmd
    shm = [a for a in cmd if a.startswith("--backend-config=python,shm-")]
    assert shm == [
        f"--backend-config=python,shm-{k}-byte-size=67108864" for k in ("default", "growth")
    ]


# --- a real tritonserver in explicit mode ---------------------------------------------

MODELS = ("tiny-a", "tiny-b", "tiny-c")


@pytest.fixture(scope="module")
def explicit_server(
    tiny_checkpoint: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    """Three small models; tiny-a is loaded (and pinned) at start, the others are not."""
    import os

    root = tmp_path_factory.mktemp("control")
    for name in MODELS:
        target = convert.Target(name, max_seq_len=64, threads=1)
        convert.publish(convert.stage(tiny_checkpoint, target, root / "work" / name), root / "repo")
    env = {**os.environ, "DOCQ_MODEL_STARTUP": "tiny-a", "DOCQ_MODEL_PINNED": "tiny-a"}
    with triton_server(
        root / "repo", root / "triton.log", extra=["--model-control", "explicit"], env=env
    ) as url:
        yield url, root / "repo"


@pytest.fixture
def control(explicit_server: tuple[str, Path]) -> Iterator[ModelControl]:
    url, repo = explicit_server
    client = grpcclient.InferenceServerClient(url)
    for name in MODELS[1:]:  # every test starts with only the pinned model resident
        if client.is_model_ready(name):
            client.unload_model(name)
    wait_for(lambda: not any(client.is_model_ready(m) for m in MODELS[1:]), 60, "unloads")
    yield ModelControl(client, repo, Policy(pinned=frozenset({"tiny-a"}), idle_s=0))
    client.close()


def _with(control: ModelControl, **policy: object) -> ModelControl:
    base = {"pinned": frozenset({"tiny-a"}), "idle_s": 0.0}
    return ModelControl(control.client, control.repository, Policy(**{**base, **policy}))  # type: ignore[arg-type]


def _state(control: ModelControl, name: str) -> ModelState:
    return control.statuses()[name].state


def _wait_unloaded(control: ModelControl, name: str) -> None:
    wait_for(lambda: _state(control, name) is ModelState.UNLOADED, 60, f"{name} unloaded")


@pytest.mark.e2e
def test_startup_model_is_loaded_and_warmed_the_others_wait(control: ModelControl) -> None:
    states = {n: s.state for n, s in control.statuses().items()}
    assert states["tiny-a"] is ModelState.READY
    assert {states["tiny-b"], states["tiny-c"]} <= {ModelState.AVAILABLE, ModelState.UNLOADED}
    assert control.last_used_ms()["tiny-a"] > 0  # the warm-up sample ran at load


@pytest.mark.e2e
def test_a_model_loads_on_first_use_and_its_load_time_is_measured(
    control: ModelControl,
) -> None:
    def loads() -> float:
        return REGISTRY.get_sample_value("docq_model_load_seconds_count", {"model": "tiny-b"}) or 0

    before = loads()
    assert control.ensure_ready("tiny-b") is True
    assert control.statuses()["tiny-b"] == ModelStatus("tiny-b", ModelState.READY, "1")
    assert control.ensure_ready("tiny-b") is False  # ready: nothing to do
    assert loads() == before + 1
    assert (REGISTRY.get_sample_value("docq_model_load_seconds_sum", {"model": "tiny-b"}) or 0) > 0


@pytest.mark.e2e
def test_least_recently_used_unpinned_model_is_unloaded(control: ModelControl) -> None:
    lru = _with(control, max_loaded=2)
    lru.ensure_ready("tiny-b")
    lru.ensure_ready("tiny-c")  # a (pinned) + b + c > 2: b, the LRU unpinned one, goes
    _wait_unloaded(control, "tiny-b")
    assert _state(control, "tiny-a") is ModelState.READY
    assert _state(control, "tiny-c") is ModelState.READY

    lru.ensure_ready("tiny-b")  # back on demand; now c is the least recently used
    _wait_unloaded(control, "tiny-c")
    assert {_state(control, m) for m in ("tiny-a", "tiny-b")} == {ModelState.READY}
    unloads = REGISTRY.get_sample_value("docq_model_unloads_total", {"model": "tiny-b"})
    assert unloads is not None and unloads >= 1


@pytest.mark.e2e
def test_pinned_model_stays_even_when_it_alone_exceeds_the_cap(control: ModelControl) -> None:
    pinned_only = _with(control, max_loaded=1)
    pinned_only.ensure_ready("tiny-b")
    pinned_only.ensure_ready("tiny-c")
    _wait_unloaded(control, "tiny-b")
    assert _state(control, "tiny-a") is ModelState.READY  # pinned: over the cap, kept
    assert _state(control, "tiny-c") is ModelState.READY  # needed now: kept


@pytest.mark.e2e
def test_a_model_in_use_is_not_unloaded(control: ModelControl) -> None:
    patient = _with(control, max_loaded=2, idle_s=3600)
    patient.ensure_ready("tiny-b")
    patient.ensure_ready("tiny-c")  # b answered (its warm-up) within the hour: kept
    assert {_state(control, m) for m in MODELS} == {ModelState.READY}


@pytest.mark.e2e
def test_memory_budget_unloads_to_fit(control: ModelControl) -> None:
    one = control.size_mb("tiny-b")
    assert one > 1  # the model's files: what a resident copy is estimated to take
    budget = _with(control, memory_budget_mb=int(one * 2.5))
    budget.ensure_ready("tiny-b")
    budget.ensure_ready("tiny-c")
    _wait_unloaded(control, "tiny-b")
    assert _state(control, "tiny-c") is ModelState.READY


@pytest.mark.e2e
def test_unknown_model_is_a_permanent_error(control: ModelControl) -> None:
    with pytest.raises(UnknownModel, match="nope"):
        control.ensure_ready("nope")


@pytest.mark.e2e
def test_without_explicit_control_a_missing_model_is_retried_not_loaded(
    control: ModelControl,
) -> None:
    hands_off = ModelControl(control.client, control.repository, Policy(explicit=False))
    with pytest.raises(InferenceUnavailable, match="not ready"):
        hands_off.ensure_ready("tiny-b")
    assert _state(control, "tiny-b") is not ModelState.READY


@pytest.mark.e2e
def test_a_model_that_fails_to_load_ends_the_wait_with_its_reason(
    tiny_checkpoint: Path, tmp_path: Path
) -> None:
    target = convert.Target("broken", max_seq_len=64, threads=1)
    convert.publish(convert.stage(tiny_checkpoint, target, tmp_path / "work"), tmp_path / "repo")
    (tmp_path / "repo" / "broken" / "1" / "model.onnx").write_bytes(b"not an ONNX graph")
    # LoadFailed, not the TimeoutError of a wait that lasted the whole 170 s
    with (
        pytest.raises(LoadFailed, match=r"could not load broken: \S"),
        triton_server(tmp_path / "repo", tmp_path / "triton.log", models=["broken"], timeout=170),
    ):
        pass
