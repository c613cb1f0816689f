"""The models Triton serves, as the API and the workers see them (over gRPC).

With several Triton endpoints (DOCQ_TRITON_GRPC_URLS) every server holds the same
repository: the index and a model's config come from the first endpoint that answers; a
model is made ready on every endpoint that can be reached (loaded there in explicit model
control), and an endpoint that cannot be reached, or cannot load it, is left out for now:
the workers route batches around it (workers/inference.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from docq.config import get_settings
from docq.errors import InferenceUnavailable, UnknownModel
from docq.model_control import ModelControl, ModelStatus, Policy, merge_statuses
from docq.models import ModelSpec

log = logging.getLogger(__name__)

T = TypeVar("T")
# The longest one question to a Triton endpoint (its model index, a model's config) may
# take before the next endpoint is asked. Without it a silent endpoint held every upload
# until gRPC's keepalive gave up on it, 20-28 s (the fleet's Triton-host partition).
CALL_TIMEOUT_S = 5.0
ClientFactory = Callable[[str], grpcclient.InferenceServerClient]

# tritonclient's own channel options, plus round-robin balancing over the addresses a name
# resolves to: one URL naming a headless Kubernetes Service (one address per ready pod)
# spreads its requests over every pod instead of pinning a process to the first one.
_KEEPALIVE = grpcclient.KeepAliveOptions()
CHANNEL_ARGS = [
    ("grpc.max_send_message_length", 2**31 - 1),
    ("grpc.max_receive_message_length", 2**31 - 1),
    ("grpc.keepalive_time_ms", _KEEPALIVE.keepalive_time_ms),
    ("grpc.keepalive_timeout_ms", _KEEPALIVE.keepalive_timeout_ms),
    ("grpc.keepalive_permit_without_calls", _KEEPALIVE.keepalive_permit_without_calls),
    ("grpc.http2.max_pings_without_data", _KEEPALIVE.http2_max_pings_without_data),
    ("grpc.lb_policy_name", "round_robin"),
    # Reconnect to a server that died at most a second after it is back: gRPC's default
    # backoff grows to two minutes, so a channel to a tritonserver down for 10 s would
    # next try ~16 s after it died. A second's attempt at a dead port costs nothing.
    ("grpc.initial_reconnect_backoff_ms", 250),
    ("grpc.max_reconnect_backoff_ms", 1000),
]


def triton_client(url: str) -> grpcclient.InferenceServerClient:
    """A gRPC client to the Triton endpoint `url` (host:port), balancing over its addresses."""
    return grpcclient.InferenceServerClient(url, channel_args=CHANNEL_ARGS)


@dataclass
class _Server:
    """One endpoint: its client and the model control that uses it."""

    url: str
    client: grpcclient.InferenceServerClient
    control: ModelControl


class ModelCatalog:
    """Caches Triton's repository index and model configs for a few seconds.

    Create one per process after fork: it holds gRPC channels.
    """

    def __init__(
        self,
        urls: str | Sequence[str],
        repository: Path,
        *,
        ttl_s: float = 5.0,
        policy: Policy | None = None,
        client_factory: ClientFactory = triton_client,
    ) -> None:
        urls = [urls] if isinstance(urls, str) else list(urls)
        if not urls:
            raise ValueError("at least one Triton endpoint is needed")
        self.repository = repository
        self.ttl_s = ttl_s
        # Model control follows the process's settings unless told otherwise.
        self.policy = policy or Policy.from_settings(get_settings())
        self._factory = client_factory
        self._servers = [self._server(u) for u in urls]
        self._lock = threading.Lock()
        self._index: tuple[float, list[dict[str, Any]]] | None = None
        self._specs: dict[str, tuple[float, ModelSpec]] = {}

    @property
    def urls(self) -> list[str]:
        return [s.url for s in self._servers]

    @property
    def client(self) -> grpcclient.InferenceServerClient:
        """The first endpoint's client (the one endpoint, in a one-server setup)."""
        return self._servers[0].client

    @property
    def control(self) -> ModelControl:
        return self._servers[0].control

    def _server(self, url: str) -> _Server:
        client = self._factory(url)
        return _Server(url, client, ModelControl(client, self.repository, self.policy))

    def _reconnect(self, i: int) -> None:
        """A fresh channel for an endpoint that failed: gRPC backs off reconnecting the old
        one (up to minutes) after its server died, which would hide its return. The old
        client is dropped, not closed: another thread may be in a call on it, and the
        client closes its channel itself once nothing holds it."""
        with self._lock:
            self._servers[i] = self._server(self._servers[i].url)

    def _first(self, call: Callable[[_Server], T], what: str) -> T:
        """`call` on the first endpoint that answers; InferenceUnavailable if none does."""
        errors: list[str] = []
        for i, server in enumerate(list(self._servers)):
            try:
                return call(server)
            except InferenceServerException as exc:
                errors.append(f"{server.url}: {exc.message()}")
                self._reconnect(i)
        raise InferenceUnavailable(f"inference server unavailable ({what})", errors)

    def index(self) -> list[dict[str, Any]]:
        """Every model in the repository: name, version, state (READY, UNAVAILABLE...)."""
        with self._lock:
            if self._index and time.monotonic() - self._index[0] < self.ttl_s:
                return self._index[1]
        models: list[dict[str, Any]] = self._first(
            lambda s: s.client.get_model_repository_index(
                headers=self.policy.headers, as_json=True, client_timeout=CALL_TIMEOUT_S
            ).get("models", []),
            "repository index",
        )
        with self._lock:
            self._index = (time.monotonic(), models)
        return models

    def require(self, name: str) -> None:
        """Raise UnknownModel unless the repository holds `name`."""
        names = {m["name"] for m in self.index()}
        if name not in names:
            raise UnknownModel(f"unknown model {name!r}", {"model": name, "known": sorted(names)})

    def spec(self, name: str) -> ModelSpec:
        """The model's pipeline parameters from its served config, read from the first
        endpoint that serves it (cached for ttl_s)."""
        with self._lock:
            hit = self._specs.get(name)
            if hit and time.monotonic() - hit[0] < self.ttl_s:
                return hit[1]
        errors: list[str] = []
        config = None
        for i, server in enumerate(list(self._servers)):
            try:
                config = server.client.get_model_config(
                    name, headers=self.policy.headers, as_json=True, client_timeout=CALL_TIMEOUT_S
                )["config"]
                break
            except InferenceServerException as exc:
                text = str(exc).lower()
                errors.append(f"{server.url}: {exc.message()}")
                if "unknown model" not in text and "not found" not in text:
                    self._reconnect(i)  # unreachable, not merely without the model
        if config is None:
            if any("unknown model" in e.lower() or "not found" in e.lower() for e in errors):
                self.require(name)  # UnknownModel if it is not in the repository at all
            raise InferenceUnavailable(f"model {name!r} is not available", errors)
        spec = ModelSpec.from_triton_config(config, self.repository)
        with self._lock:
            self._specs[name] = (time.monotonic(), spec)
        return spec

    def ensure_ready(self, name: str) -> None:
        """Return once `name` is served by at least one endpoint, making it ready on every
        endpoint that can be reached (docq/model_control.py); the others are routed around.

        Raises UnknownModel for a model the repository does not hold, InferenceUnavailable
        (retried by the worker) when no endpoint serves it.
        """
        ready, loaded, errors = 0, False, []
        for i, server in enumerate(list(self._servers)):
            try:
                loaded = server.control.ensure_ready(name) or loaded
                ready += 1
            except InferenceUnavailable as exc:
                errors.append(f"{server.url}: {exc.message} {exc.detail or ''}".strip())
                if len(self._servers) > 1:
                    log.warning("model %s is not ready at %s: %s", name, server.url, exc.message)
                self._reconnect(i)
        if loaded:
            with self._lock:
                self._index = None  # the index cached before the load is stale
        if not ready:
            raise InferenceUnavailable(f"no Triton endpoint serves model {name!r}", errors)

    def statuses(self) -> dict[str, ModelStatus]:
        """Every model of the repository with its state and version, read from Triton now;
        with several endpoints, each model's best state among those that answer."""
        found: list[dict[str, ModelStatus]] = []
        errors: list[str] = []
        for i, server in enumerate(list(self._servers)):
            try:
                found.append(server.control.statuses())
            except InferenceUnavailable as exc:
                errors.append(f"{server.url}: {exc.detail}")
                self._reconnect(i)
        if not found:
            raise InferenceUnavailable("inference server unavailable", errors)
        return merge_statuses(found)

    def endpoints_ready(self) -> dict[str, bool]:
        """Each endpoint's readiness, asked now."""
        out: dict[str, bool] = {}
        for i, server in enumerate(list(self._servers)):
            try:
                out[server.url] = bool(server.client.is_server_ready(client_timeout=5))
            except InferenceServerException:
                out[server.url] = False
                self._reconnect(i)
        return out

    def server_ready(self) -> bool:
        """At least one endpoint is ready (the workers route around the others)."""
        return any(self.endpoints_ready().values())

    def close(self) -> None:
        for server in self._servers:
            server.client.close()
