"""The models Triton serves, as the API and the workers see them (over gRPC)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from docq.config import get_settings
from docq.errors import InferenceUnavailable, UnknownModel
from docq.model_control import ModelControl, ModelStatus, Policy
from docq.models import ModelSpec


class ModelCatalog:
    """Caches Triton's repository index and model configs for a few seconds.

    Create one per process after fork: it holds a gRPC channel.
    """

    def __init__(
        self, url: str, repository: Path, *, ttl_s: float = 5.0, policy: Policy | None = None
    ) -> None:
        self.client = grpcclient.InferenceServerClient(url)
        self.repository = repository
        self.ttl_s = ttl_s
        # Model control follows the process's settings unless told otherwise.
        self.control = ModelControl(
            self.client, repository, policy or Policy.from_settings(get_settings())
        )
        self._lock = threading.Lock()
        self._index: tuple[float, list[dict[str, Any]]] | None = None
        self._specs: dict[str, tuple[float, ModelSpec]] = {}

    def index(self) -> list[dict[str, Any]]:
        """Every model in the repository: name, version, state (READY, UNAVAILABLE...)."""
        with self._lock:
            if self._index and time.monotonic() - self._index[0] < self.ttl_s:
                return self._index[1]
        try:
            models = self.client.get_model_repository_index(as_json=True).get("models", [])
        except InferenceServerException as exc:
            raise InferenceUnavailable("inference server unavailable", str(exc)) from exc
        with self._lock:
            self._index = (time.monotonic(), models)
        return models

    def require(self, name: str) -> None:
        """Raise UnknownModel unless the repository holds `name`."""
        names = {m["name"] for m in self.index()}
        if name not in names:
            raise UnknownModel(f"unknown model {name!r}", {"model": name, "known": sorted(names)})

    def spec(self, name: str) -> ModelSpec:
        """The model's pipeline parameters from its served config (cached for ttl_s)."""
        with self._lock:
            hit = self._specs.get(name)
            if hit and time.monotonic() - hit[0] < self.ttl_s:
                return hit[1]
        try:
            config = self.client.get_model_config(name, as_json=True)["config"]
        except InferenceServerException as exc:
            if "unknown model" in str(exc).lower() or "not found" in str(exc).lower():
                self.require(name)  # UnknownModel if it is not in the repository at all
            raise InferenceUnavailable(f"model {name!r} is not available", str(exc)) from exc
        spec = ModelSpec.from_triton_config(config, self.repository)
        with self._lock:
            self._specs[name] = (time.monotonic(), spec)
        return spec

    def ensure_ready(self, name: str) -> None:
        """Return once Triton serves `name`, loading it first if needed (docq/model_control.py)."""
        if self.control.ensure_ready(name):
            with self._lock:
                self._index = None  # the index cached before the load is stale

    def statuses(self) -> dict[str, ModelStatus]:
        """Every model of the repository with its state and version, read from Triton now."""
        return self.control.statuses()

    def server_ready(self) -> bool:
        try:
            return bool(self.client.is_server_ready())
        except InferenceServerException:
            return False

    def close(self) -> None:
        self.client.close()
