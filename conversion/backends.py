"""The builds of the ONNX runtimes' files: sample batches to compare a build with PyTorch, the
fused graph (ONNX Runtime's transformer optimizer), OpenVINO IR and INT8 quantization.

conversion/convert.py's `stage` picks among them by the Target's runtime and precision; the
plain export is conversion/export.py's, the TensorRT engine conversion/tensorrt.py's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerFast

from conversion import export
from conversion.target import Target
from serving import runtimes


def sample_batches(
    vocab_size: int, max_seq_len: int, seed: int = 0, pad_id: int = 0
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Random token batches with padded rows (`pad_id`: the tokenizer's) and lengths up to
    max_seq_len: ONNX vs PyTorch. A model's positions end at max_seq_len (RoBERTa's)."""
    rng = np.random.default_rng(seed)
    batches = []
    for rows, longest in ((1, 2), (2, 17), (3, max_seq_len), (5, 129)):
        longest = min(longest, max_seq_len)
        ids = rng.integers(
            min(1000, vocab_size - 1), vocab_size, size=(rows, longest), dtype=np.int64
        )
        mask = np.ones_like(ids)
        for r in range(1, rows):  # every row but the first is padded
            mask[r, rng.integers(1, longest + 1) :] = 0
        ids[mask == 0] = pad_id
        batches.append((ids, mask))
    return batches


def export_fused(
    model: PreTrainedModel,
    plain: Path,
    fused: Path,
    tokenizer: PreTrainedTokenizerFast | None = None,
) -> dict[str, int]:
    """Export `model` to `plain` and its fused graph to `fused`; return the fused operators.

    The optimizer recognises attention in eager attention's graph, not in SDPA's, so the
    model is left on eager attention (callers that run it in PyTorch may switch back).
    """
    model.set_attn_implementation("eager")
    export.export(model, plain, tokenizer)  # onnx.checker's full check runs inside
    return fuse_transformer(model, plain, fused)


def fuse_transformer(model: PreTrainedModel, source: Path, dest: Path) -> dict[str, int]:
    """Rewrite an exported BERT-like graph with ONNX Runtime's transformer optimizer; return
    how many of each fused operator it made.

    Raises RuntimeError when it fused fewer Attention nodes than the model has layers: the
    graph was not recognised (an SDPA export, or an ONNX Runtime whose optimizer does not
    know this export's pattern: 1.30 fuses none of these graphs, 1.32 all), and a graph
    published as fused would be the plain one.
    """
    import onnxruntime
    from onnxruntime.transformers import optimizer

    config = model.config
    optimized = optimizer.optimize_model(
        str(source),
        model_type="bert",
        num_heads=config.num_attention_heads,
        hidden_size=config.hidden_size,
        opt_level=0,  # fusions only: the serving session applies ORT's own optimizations
    )
    stats = {op: n for op, n in optimized.get_fused_operator_statistics().items() if n}
    layers = config.num_hidden_layers
    if stats.get("Attention", 0) < layers:
        raise RuntimeError(
            f"ONNX Runtime {onnxruntime.__version__}'s optimizer fused "
            f"{stats.get('Attention', 0)} of {layers} attention blocks ({stats}): the graph was "
            "not recognised; export with eager attention, on the version the tests pin"
        )
    optimized.save_model_to_file(str(dest))
    return stats


def to_openvino(
    onnx_path: Path,
    folder: Path,
    target: Target,
    model: PreTrainedModel,
    batches: list[tuple[np.ndarray, np.ndarray]],
) -> float:
    """Convert the checked ONNX graph to OpenVINO IR (FP32 weights) in `folder`, install the
    runtime beside it, and return its largest |logit diff| against PyTorch, as served."""
    import openvino as ov

    from serving import pb_stub

    # compress_to_fp16 would halve the file and round every weight: parity first.
    ov.save_model(ov.convert_model(str(onnx_path)), str(folder / "model.xml"), False)
    runtimes.install("openvino_cpu", folder)
    served = pb_stub.instance(
        pb_stub.load_runtime(folder / "model.py"),
        folder,
        "CPU",
        target.max_batch_size,
        precision=target.dtype,
        intra_op_threads=str(target.threads),
    )
    worst = 0.0
    with torch.inference_mode():
        for ids, mask in batches:
            expected = model(
                input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask)
            ).logits.numpy()
            worst = max(worst, float(np.abs(served._run(ids, mask) - expected).max()))
    served.finalize()
    return worst


def quantize_int8(source: Path, dest: Path) -> Path:
    """Dynamic INT8 quantization of the MatMul weights (activations quantized per batch)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(source), str(dest), weight_type=QuantType.QInt8)
    return dest
