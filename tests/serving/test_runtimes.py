"""Every CPU config `docq convert` writes is loaded and served by the real tritonserver.

The tiny checkpoint is converted for onnx-cpu (FP32, INT8, and FP32 fused by ONNX Runtime's
transformer optimizer), openvino-cpu (FP32) and torch-gpu (its runtime, run by an instance
of kind CPU, as the CPU-only server can run it; once more with `overlap` on, answering each
request through its response sender from the runtime's responder thread after execute()
returned), published into a temporary repository, served, and compared with PyTorch. The
`onnxruntime` platform needs Triton's ONNX Runtime backend, which only the NGC container
ships.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.grpc import model_config_pb2 as mc
from tritonclient.utils import InferenceServerException

from conversion import convert, parity
from conversion.checkpoint import load_checkpoint
from devstack.services import triton_server
from serving.server import wheel_root

pytestmark = [pytest.mark.e2e, pytest.mark.build]  # its repository fixture converts tiny models

MODELS = {
    "tiny-onnx": convert.Target("tiny-onnx", "onnx-cpu", max_seq_len=128, threads=1),
    "tiny-int8": convert.Target("tiny-int8", "onnx-cpu", "int8", max_seq_len=128, threads=1),
    "tiny-torch": convert.Target("tiny-torch", "torch-gpu", max_seq_len=128, threads=1),
    "tiny-overlap": convert.Target("tiny-overlap", "torch-gpu", max_seq_len=128, threads=1),
    "tiny-fused": convert.Target("tiny-fused", "onnx-cpu", max_seq_len=128, threads=1, fuse=True),
    "tiny-openvino": convert.Target("tiny-openvino", "openvino-cpu", max_seq_len=128, threads=1),
}


@pytest.fixture(scope="module")
def served(tiny_checkpoint: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("runtimes")
    for name, target in MODELS.items():
        staged = convert.stage(tiny_checkpoint, target, root / "work" / name)
        if target.runtime == "torch-gpu":
            # Served by the CPU-only server: same runtime file, an instance of kind CPU.
            staged.config.instance_group[0].kind = mc.ModelInstanceGroup.KIND_CPU
        if name == "tiny-overlap":  # a GPU instance's default, asked of a CPU one
            staged.config.parameters["overlap"].string_value = "true"
        convert.publish(staged, root / "repo")
    with triton_server(
        root / "repo", root / "triton.log", extra=["--model-control", "none"]
    ) as url:
        yield url


def _batch() -> tuple[np.ndarray, np.ndarray]:
    ids, mask = convert.sample_batches(30522, 128, seed=3)[3]  # 5 rows, 4 of them padded
    return ids, mask


@pytest.mark.parametrize(
    ("name", "atol"),
    [
        ("tiny-onnx", 1e-4),
        ("tiny-torch", 1e-4),
        ("tiny-overlap", 1e-4),
        ("tiny-fused", 1e-4),
        ("tiny-openvino", 1e-4),
    ],
)
def test_served_fp32_runtimes_compute_what_pytorch_computes(
    served: str, tiny_checkpoint: Path, name: str, atol: float
) -> None:
    model, _ = load_checkpoint(tiny_checkpoint)
    batch = _batch()
    expected = parity.torch_runner(model)(batch)
    client = grpcclient.InferenceServerClient(served)
    assert client.is_model_ready(name)
    np.testing.assert_allclose(parity.triton_runner(served, name)(batch), expected, atol=atol)
    client.close()


def test_served_int8_runtime_stays_close_to_pytorch(served: str, tiny_checkpoint: Path) -> None:
    model, _ = load_checkpoint(tiny_checkpoint)
    batch = _batch()
    got = parity.triton_runner(served, "tiny-int8")(batch)
    expected = parity.torch_runner(model)(batch)
    assert got.shape == expected.shape
    assert np.abs(got - expected).max() < 0.05  # weights quantized, not garbage


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("bad_id", [30522, -1])  # one past the vocabulary; negative
def test_a_token_outside_the_vocabulary_is_invalid_argument_not_internal(
    served: str, name: str, bad_id: int
) -> None:
    """Workers retry INTERNAL for the whole retry budget and fail only the windows of an
    INVALID_ARGUMENT: a wrong input must be the second, and must not come back as logits
    (ONNX Runtime wraps a negative index; OpenVINO fills an out-of-range one with zeros)."""
    ids, mask = _batch()
    ids[2, 5] = bad_id  # one row of the five
    inputs = []
    for key, array in (("input_ids", ids), ("attention_mask", mask)):
        tensor = grpcclient.InferInput(key, list(array.shape), "INT64")
        tensor.set_data_from_numpy(array)
        inputs.append(tensor)
    client = grpcclient.InferenceServerClient(served)
    with pytest.raises(InferenceServerException) as refused:
        client.infer(name, inputs)
    assert refused.value.status() == "StatusCode.INVALID_ARGUMENT", refused.value
    assert client.is_model_ready(name)  # still serving
    client.close()


def test_answers_sent_after_execute_returned_reach_each_request(
    served: str, tiny_checkpoint: Path
) -> None:
    """With `overlap`, execute() returns None and the responder's thread sends each
    request's one final response: concurrent requests batched into one execute() each get
    their own rows, and a bad request among them is refused alone (INVALID_ARGUMENT)."""
    model, _ = load_checkpoint(tiny_checkpoint)
    reference = parity.torch_runner(model)
    batches = convert.sample_batches(30522, 128, seed=5) + convert.sample_batches(
        30522, 128, seed=6
    )
    bad_ids = batches[2][0].copy()
    bad_ids[0, 1] = 30522  # one past the vocabulary

    def infer(ids: np.ndarray, mask: np.ndarray) -> np.ndarray | InferenceServerException:
        try:  # a client per call, as concurrent workers hold their own
            return parity.triton_runner(served, "tiny-overlap", timeout_s=60)((ids, mask))
        except InferenceServerException as exc:
            return exc

    cases = [*batches, (bad_ids, batches[2][1])] * 4
    with ThreadPoolExecutor(len(cases)) as pool:
        answers = list(pool.map(lambda case: infer(*case), cases))
    for (ids, mask), got in zip(cases, answers, strict=True):
        if ids is bad_ids:
            assert isinstance(got, InferenceServerException)
            assert got.status() == "StatusCode.INVALID_ARGUMENT", got
        else:
            assert isinstance(got, np.ndarray), got
            np.testing.assert_allclose(got, reference((ids, mask)), atol=1e-4)
    stats = grpcclient.InferenceServerClient(served).get_inference_statistics("tiny-overlap")
    (model_stats,) = stats.model_stats
    assert model_stats.inference_stats.success.count >= len(batches) * 4


def test_every_served_config_is_the_one_published(served: str) -> None:
    client = grpcclient.InferenceServerClient(served)
    for name, target in MODELS.items():
        config = client.get_model_config(name).config
        assert config.max_batch_size == target.max_batch_size
        assert config.parameters["runtime"].string_value == target.runtime
        assert config.parameters["precision"].string_value == target.dtype
        assert config.model_warmup[0].name == "zeros"  # warmed before READY
        stats = client.get_inference_statistics(name).model_stats[0]
        assert stats.last_inference > 0  # the warm-up ran
    client.close()


def test_onnxruntime_platform_config_loads_where_the_backend_exists(
    tiny_checkpoint: Path, tmp_path: Path
) -> None:
    if not (wheel_root() / "backends" / "onnxruntime").exists():
        pytest.skip("this tritonserver ships only the Python backend (NGC has onnxruntime)")
    staged = convert.stage(tiny_checkpoint, convert.Target("tiny-ort", "onnxruntime"), tmp_path)
    convert.publish(staged, tmp_path / "repo")
    with triton_server(
        tmp_path / "repo", tmp_path / "t.log", extra=["--model-control", "none"]
    ) as url:
        assert grpcclient.InferenceServerClient(url).is_model_ready("tiny-ort")
