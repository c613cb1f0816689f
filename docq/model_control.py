"""Explicit model control: many models share one Triton, loaded on first use, unloaded by LRU.

Triton runs with `--model-control-mode=explicit` (serving/server.py): at start it loads
the startup and pinned models (DOCQ_MODEL_STARTUP, DOCQ_MODEL_PINNED), each warmed by the
`model_warmup` sample its config.pbtxt carries before it is READY. Every other model of
the repository is loaded when a job first needs it:

    worker: ensure_ready(model) ── ready? ──yes──> infer
                                     │ no
                                     v
            make room: unload least recently used, unpinned, idle models while more than
            DOCQ_MODEL_MAX_LOADED are resident (or their files exceed the memory budget)
                                     v
            load (blocks until Triton has loaded and warmed it; concurrent callers of other
            processes wait in Triton for the same load) ──> infer

State lives in Triton: its repository index says what is loading, ready or unloaded, and
its statistics give each model's last inference (a warm-up counts), the LRU clock of every
process at once. Two workers making room at once may unload one model too many, never a
busy one: a model that answered within DOCQ_MODEL_IDLE_S stays even over the (soft) cap.
A shard whose model is unloaded all the same gets a retryable error; its retry reloads it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import tritonclient.grpc as grpcclient
from prometheus_client import Counter, Histogram
from tritonclient.utils import InferenceServerException

from docq.config import Settings
from docq.errors import InferenceUnavailable, UnknownModel

log = logging.getLogger(__name__)
# Triton's admin APIs' header (serving/server.py), and the name gRPC callers send it under
ADMIN_HEADER, GRPC_ADMIN_HEADER = "triton-admin-key", "triton-grpc-protocol-triton-admin-key"

LOAD_SECONDS = Histogram(
    "docq_model_load_seconds",
    "Time from asking Triton to load a model to the model being ready (warm-up included).",
    ["model"],
    buckets=(0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300),
)
LOADS = Counter(
    "docq_model_loads_total", "Model loads this process asked Triton for.", ["model", "outcome"]
)
UNLOADS = Counter(
    "docq_model_unloads_total", "Models this process unloaded to make room (LRU).", ["model"]
)


class ModelState(StrEnum):
    """Where a model of the repository stands in Triton."""

    AVAILABLE = "available"  # in the repository, not loaded since the server started
    LOADING = "loading"  # being loaded (and warmed); jobs for it wait
    READY = "ready"  # loaded: requests are served
    UNLOADING = "unloading"  # being unloaded; requests in flight finish
    UNLOADED = "unloaded"  # was loaded, unloaded since (LRU or by hand); loads on next use
    FAILED = "failed"  # its last load failed; `reason` says why; the next use tries again


@dataclass(frozen=True)
class ModelStatus:
    """One model's state and served version."""

    name: str
    state: ModelState
    version: str | None  # the version served (ready) or being loaded
    reason: str | None = None


# Which state wins when one model has several: a version (or a server) serving it is best.
_RANK = {
    ModelState.READY: 5,
    ModelState.LOADING: 4,
    ModelState.UNLOADING: 3,
    ModelState.FAILED: 2,
    ModelState.UNLOADED: 1,
    ModelState.AVAILABLE: 0,
}


def statuses(entries: Iterable[Mapping[str, Any]]) -> dict[str, ModelStatus]:
    """Fold Triton's repository index (one entry per model version) into one status per model.

    While a new version loads, the old one stays READY: the model counts as ready, serving
    the newest ready version.
    """
    out: dict[str, ModelStatus] = {}
    for entry in entries:
        name = str(entry["name"])
        state, reason = _state(str(entry.get("state", "")), str(entry.get("reason", "")))
        version = str(entry["version"]) if entry.get("version") else None
        status = ModelStatus(name, state, version if state is not ModelState.AVAILABLE else None)
        if reason:
            status = ModelStatus(name, state, status.version, reason)
        best = out.get(name)
        if (
            best is None
            or _RANK[state] > _RANK[best.state]
            or (state is best.state and _newer(status.version, best.version))
        ):
            out[name] = status
    return out


def merge_statuses(per_server: Iterable[Mapping[str, ModelStatus]]) -> dict[str, ModelStatus]:
    """One status per model over several servers: the best state any of them is in (a model
    ready on one server is served), and among equal states the newest version."""
    out: dict[str, ModelStatus] = {}
    for found in per_server:
        for name, status in found.items():
            best = out.get(name)
            if (
                best is None
                or _RANK[status.state] > _RANK[best.state]
                or (status.state is best.state and _newer(status.version, best.version))
            ):
                out[name] = status
    return dict(sorted(out.items()))


def _state(triton_state: str, reason: str) -> tuple[ModelState, str | None]:
    if triton_state == "READY":
        return ModelState.READY, None
    if triton_state == "LOADING":
        return ModelState.LOADING, None
    if triton_state == "UNLOADING":
        return ModelState.UNLOADING, None
    if triton_state == "UNAVAILABLE":
        if reason.strip().lower() == "unloaded":
            return ModelState.UNLOADED, None
        return ModelState.FAILED, reason or None
    return ModelState.AVAILABLE, None  # listed by the index but never loaded


def _newer(a: str | None, b: str | None) -> bool:
    return a is not None and (b is None or (a.isdigit() and b.isdigit() and int(a) > int(b)))


@dataclass(frozen=True)
class Policy:
    """How models are kept in memory; read from the settings."""

    explicit: bool = True  # False: Triton loads everything at start, nothing is loaded here
    pinned: frozenset[str] = frozenset()
    max_loaded: int = 0  # 0: no cap
    memory_budget_mb: int = 0  # 0: no budget
    idle_s: float = 30.0
    admin_key: str = ""  # Triton's restricted APIs: sent as the triton-admin-key header

    @classmethod
    def from_settings(cls, s: Settings) -> Policy:
        return cls(
            explicit=s.model_control == "explicit",
            pinned=frozenset(s.pinned_models),
            max_loaded=s.model_max_loaded,
            memory_budget_mb=s.model_memory_budget_mb,
            idle_s=s.model_idle_s,
            admin_key=s.triton_admin_key,
        )

    @property
    def headers(self) -> dict[str, str] | None:  # of calls to Triton's restricted APIs
        return {GRPC_ADMIN_HEADER: self.admin_key} if self.admin_key else None


def choose_unloads(
    resident: Iterable[str],
    keep: str,
    last_used_ms: Mapping[str, int],
    size_mb: Mapping[str, float],
    policy: Policy,
    now_ms: int,
) -> list[str]:
    """The models to unload so that `keep` fits: least recently used first.

    Pinned models, `keep` itself and models used within `policy.idle_s` are never chosen,
    so the result may leave the server over the cap (the cap is soft).
    """
    loaded = set(resident) | {keep}

    def over(models: set[str]) -> bool:
        if policy.max_loaded and len(models) > policy.max_loaded:
            return True
        return bool(
            policy.memory_budget_mb
            and sum(size_mb.get(m, 0.0) for m in models) > policy.memory_budget_mb
        )

    idle_ms = policy.idle_s * 1000
    candidates = sorted(
        (
            m
            for m in loaded
            if m != keep and m not in policy.pinned and now_ms - last_used_ms.get(m, 0) >= idle_ms
        ),
        key=lambda m: (last_used_ms.get(m, 0), m),
    )
    chosen: list[str] = []
    for m in candidates:
        if not over(loaded):
            break
        loaded.discard(m)
        chosen.append(m)
    return chosen


class ModelControl:
    """Loads and unloads models of one Triton server; one per process and server (it uses a
    gRPC client). With several servers, each is controlled on its own (docq/catalog.py)."""

    def __init__(
        self,
        client: grpcclient.InferenceServerClient,
        repository: Path,
        policy: Policy,
        *,
        probe_timeout_s: float = 10.0,
    ) -> None:
        self.client = client
        self.repository = repository
        self.policy = policy
        # Deadline of the quick questions (ready? index, statistics): a server that hangs
        # must not hold a shard forever. Loads have none: a job waits for its model.
        self.probe_timeout_s = probe_timeout_s

    def statuses(self) -> dict[str, ModelStatus]:
        """Every model of the repository and its state, read from Triton now."""
        try:
            index = self.client.get_model_repository_index(
                headers=self.policy.headers, as_json=True, client_timeout=self.probe_timeout_s
            ).get("models", [])
        except InferenceServerException as exc:
            raise InferenceUnavailable("inference server unavailable", str(exc)) from exc
        return statuses(index)

    def ensure_ready(self, name: str) -> bool:
        """Return once `name` is ready, loading it first if needed; True if this call loaded it.

        Blocks for as long as the load takes (no deadline: a job waits for its model rather
        than failing). Raises UnknownModel for a model the repository does not hold, and
        InferenceUnavailable (retried by the worker) when Triton cannot be reached or the
        load fails.
        """
        try:
            if self.client.is_model_ready(name, client_timeout=self.probe_timeout_s):
                return False
        except InferenceServerException as exc:
            raise InferenceUnavailable("inference server unavailable", str(exc)) from exc
        known = self.statuses()
        if name not in known:
            raise UnknownModel(f"unknown model {name!r}", {"model": name, "known": sorted(known)})
        if not self.policy.explicit:
            # Triton loads models itself (mode none or poll): wait for it, through a retry.
            raise InferenceUnavailable(
                f"model {name!r} is not ready ({known[name].state})", known[name].reason
            )
        self.make_room(name)
        start = time.monotonic()
        try:
            self.client.load_model(name, headers=self.policy.headers)
        except InferenceServerException as exc:
            LOADS.labels(name, "failed").inc()
            raise InferenceUnavailable(f"model {name!r} failed to load", exc.message()) from exc
        elapsed = time.monotonic() - start
        LOAD_SECONDS.labels(name).observe(elapsed)
        LOADS.labels(name, "loaded").inc()
        log.info("model %s loaded in %.1f s", name, elapsed)
        # Another process may have loaded a model meanwhile: enforce the cap again.
        self.make_room(name)
        return True

    def make_room(self, keep: str) -> list[str]:
        """Unload LRU models until `keep` fits the cap and budget; return what was unloaded."""
        if not (self.policy.max_loaded or self.policy.memory_budget_mb):
            return []
        resident = [
            s.name
            for s in self.statuses().values()
            if s.state in (ModelState.READY, ModelState.LOADING)
        ]
        victims = choose_unloads(
            resident,
            keep,
            self.last_used_ms(),
            {m: self.size_mb(m) for m in {*resident, keep}},
            self.policy,
            int(time.time() * 1000),
        )
        for m in victims:
            try:
                self.client.unload_model(m, headers=self.policy.headers)
            except InferenceServerException as exc:  # unloaded by someone else meanwhile
                log.warning("could not unload model %s: %s", m, exc)
                continue
            UNLOADS.labels(m).inc()
            log.info("model %s unloaded to make room for %s (least recently used)", m, keep)
        return victims

    def last_used_ms(self) -> dict[str, int]:
        """Each loaded model's last inference (Triton's clock, ms since the epoch; 0: never)."""
        try:
            stats = self.client.get_inference_statistics(
                headers=self.policy.headers, as_json=True, client_timeout=self.probe_timeout_s
            ).get("model_stats", [])
        except InferenceServerException as exc:
            raise InferenceUnavailable("inference server unavailable", str(exc)) from exc
        out: dict[str, int] = {}
        for s in stats:
            name = s["name"]
            out[name] = max(out.get(name, 0), int(s.get("last_inference", 0) or 0))
        return out

    def size_mb(self, name: str) -> float:
        """The memory a model is estimated to take: the size of its newest version's files."""
        folder = self.repository / name
        versions = [p for p in folder.glob("*") if p.is_dir() and p.name.isdigit()]
        if not versions:
            return 0.0
        newest = max(versions, key=lambda p: int(p.name))
        return sum(f.stat().st_size for f in newest.rglob("*") if f.is_file()) / 2**20
