"""With DOCQ_TRITON_ADMIN_KEY set, the launcher puts Triton's admin APIs (model repository,
config, statistics, shared memory, trace, logging) behind the triton-admin-key header, on
HTTP and gRPC; docq's model control sends it, and inference and health stay open."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from devstack.services import triton_server
from docq.errors import InferenceUnavailable
from docq.model_control import (
    ADMIN_HEADER,
    GRPC_ADMIN_HEADER,
    ModelControl,
    ModelState,
    Policy,
)
from serving.server import restrictions
from tests.conftest import link_model

pytestmark = pytest.mark.e2e

KEY = "admin-key-for-tests"
MODEL = "doc-lang"  # not a startup model: loaded only when asked


def test_no_key_no_restriction_and_a_key_restricts_both_protocols() -> None:
    assert restrictions("") == []
    http, grpc = restrictions(KEY)
    for flag, name in ((http, "--http-restricted-api"), (grpc, "--grpc-restricted-protocol")):
        assert flag.startswith(f"{name}=model-repository,")
        assert flag.endswith(f":{ADMIN_HEADER}={KEY}")
        assert "inference" not in flag and "health" not in flag


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    root = tmp_path_factory.mktemp("admin")
    link_model(root / "repo", MODEL)
    env = {**os.environ, "DOCQ_TRITON_ADMIN_KEY": KEY}
    with triton_server(
        root / "repo", root / "triton.log", extra=["--model-control", "explicit"], env=env
    ) as url:
        yield url, root / "repo"


def test_admin_calls_without_the_key_are_refused(server: tuple[str, Path]) -> None:
    url, _ = server
    client = grpcclient.InferenceServerClient(url)
    for call in (
        lambda: client.get_model_repository_index(),
        lambda: client.load_model(MODEL),
        lambda: client.get_inference_statistics(),
        lambda: client.get_model_config(MODEL),
        lambda: client.load_model(MODEL, headers={GRPC_ADMIN_HEADER: "wrong"}),
        lambda: client.load_model(MODEL, headers={ADMIN_HEADER: KEY}),  # HTTP's name
    ):
        with pytest.raises(InferenceServerException, match=r"(?i)restricted|header"):
            call()
    assert client.is_server_ready()  # health stays open
    assert not client.is_model_ready(MODEL)  # and nothing was loaded
    client.close()


def test_model_control_with_the_key_loads_and_inference_stays_open(
    server: tuple[str, Path],
) -> None:
    url, repo = server
    client = grpcclient.InferenceServerClient(url)
    with pytest.raises(InferenceUnavailable):  # a worker without the key cannot load
        ModelControl(client, repo, Policy()).ensure_ready(MODEL)
    control = ModelControl(client, repo, Policy(admin_key=KEY))
    assert control.ensure_ready(MODEL) is True
    assert control.statuses()[MODEL].state is ModelState.READY
    assert MODEL in control.last_used_ms()
    ids = np.full((1, 8), 1000, dtype=np.int64)
    inputs = []
    for name in ("input_ids", "attention_mask"):
        tensor = grpcclient.InferInput(name, list(ids.shape), "INT64")
        tensor.set_data_from_numpy(ids if name == "input_ids" else np.ones_like(ids))
        inputs.append(tensor)
    logits = client.infer(MODEL, inputs).as_numpy("logits")  # no header needed
    assert logits is not None and logits.shape[0] == 1
    client.close()


def test_http_admin_api_needs_the_key_too(server: tuple[str, Path]) -> None:
    log = server[1].parent / "triton.log"
    http_port = next(  # the launcher's HTTP port, from Triton's own start-up line
        line.rsplit(":", 1)[1].strip().strip('"')
        for line in log.read_text().splitlines()
        if "Started HTTPService at" in line
    )
    base = f"http://127.0.0.1:{http_port}"
    assert httpx.post(f"{base}/v2/repository/index").status_code == 403
    ok = httpx.post(f"{base}/v2/repository/index", headers={ADMIN_HEADER: KEY})
    assert ok.status_code == 200
    assert httpx.get(f"{base}/v2/health/ready").status_code == 200
