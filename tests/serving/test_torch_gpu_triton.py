"""The torch-gpu runtime inside a real GPU tritonserver (skipped without CUDA).

A tiny BERT checkpoint is laid out as `docq convert --runtime torch-gpu` lays it out (its
runtime files, the generated config.pbtxt with an instance of kind GPU), served, and
answered through gRPC: full windows (the graphs without a mask), padded ones (the graphs
with it), and many requests at once of different lengths, which Triton's batcher pads
into shared batches, each request answered with its own rows. On the GPU device, which
lacks docq's dependencies and has no use for its conftest (devstack/carry/remote.sh carries
what this needs):

    source devstack/carry/remote.sh
    python3 -m pytest --noconftest -p no:cacheprovider -o addopts= -p tests.tiers \\
        tests/serving/test_torch_gpu_triton.py
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.support.gpu import cuda
from tests.support.tiny import tiny_bert

pytestmark = [
    pytest.mark.e2e,
    cuda,
]
LABELS = ("a", "b", "c", "d")
MAX_SEQ_LEN = 128
MODEL = "tiny-gpu"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("ckpt") / "c", LABELS, hidden=64, layers=2)


@pytest.fixture(scope="module")
def served(checkpoint: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """tritonserver serving the tiny model with the config docq generates for torch-gpu."""
    import tritonclient.grpc as grpcclient

    from conversion import convert, pbtxt
    from serving import runtimes
    from serving.server import server_command, server_env

    root = tmp_path_factory.mktemp("gpu-triton")
    model_dir = root / "repo" / MODEL
    version = model_dir / "1"
    version.mkdir(parents=True)
    for path in checkpoint.iterdir():
        os.link(path, version / path.name)
    runtimes.install("torch_gpu", version)
    # graphs up to 4 rows, eager beyond: both paths answer
    target = convert.Target(
        MODEL, "torch-gpu", max_batch_size=16, max_seq_len=MAX_SEQ_LEN, graph_max_batch=4
    )
    pbtxt.write(pbtxt.build(target.classifier_config(len(LABELS))), model_dir / "config.pbtxt")
    (model_dir / "labels.txt").write_text("".join(f"{x}\n" for x in LABELS), encoding="utf-8")
    grpc = free_port()
    cmd = server_command(root / "repo", free_port(), grpc, free_port())
    log = root / "triton.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env=server_env(dict(os.environ))
        )
    url = f"127.0.0.1:{grpc}"
    try:
        client = grpcclient.InferenceServerClient(url)
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"tritonserver did not serve {MODEL}:\n{log.read_text()[-4000:]}")
            try:
                if client.is_server_ready() and client.is_model_ready(MODEL):
                    break
            except Exception:  # not listening yet
                pass
            time.sleep(0.5)
        client.close()
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def windows(rows: int, length: int, seed: int, padded: bool) -> tuple[np.ndarray, np.ndarray]:
    """Token rows; `padded`: every row but the first shorter than `length` (mask 0 after)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, 30000, (rows, length), dtype=np.int64)
    ids[:, 0] = 101
    mask = np.ones_like(ids)
    if padded:
        for r in range(1, rows):
            mask[r, int(rng.integers(2, length)) :] = 0
    ids[mask == 0] = 0
    return ids, mask


def reference(checkpoint: Path, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """PyTorch FP32 on the CPU, straight from the checkpoint."""
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(str(checkpoint)).eval()
    with torch.inference_mode():
        out = model(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask))
    return out.logits.numpy()


def infer(url: str, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(url)
    inputs = []
    for name, array in (("input_ids", ids), ("attention_mask", mask)):
        tensor = grpcclient.InferInput(name, list(array.shape), "INT64")
        tensor.set_data_from_numpy(array)
        inputs.append(tensor)
    logits = client.infer(MODEL, inputs).as_numpy("logits")
    client.close()
    assert logits is not None
    return logits


def close_to(got: np.ndarray, expected: np.ndarray) -> None:
    """FP16 against FP32: the same labels, logits within FP16 rounding."""
    assert got.shape == expected.shape
    assert np.abs(got - expected).max() < 0.05
    assert (got.argmax(1) == expected.argmax(1)).all()


@pytest.mark.parametrize(
    ("rows", "length", "padded"),
    [(1, 128, False), (3, 64, False), (5, 77, False), (2, 128, True), (7, 100, True)],
)
def test_served_gpu_runtime_computes_what_the_checkpoint_computes(
    served: str, checkpoint: Path, rows: int, length: int, padded: bool
) -> None:
    ids, mask = windows(rows, length, rows * 100 + length, padded)
    close_to(infer(served, ids, mask), reference(checkpoint, ids, mask))


def test_requests_batched_together_each_get_their_own_rows(served: str, checkpoint: Path) -> None:
    cases = [windows(1 + i % 4, 16 + 13 * i, i, padded=i % 2 == 1) for i in range(8)]
    with ThreadPoolExecutor(len(cases)) as pool:
        answers = list(pool.map(lambda c: infer(served, *c), cases * 3))
    for (ids, mask), got in zip(cases * 3, answers, strict=True):
        close_to(got, reference(checkpoint, ids, mask))
