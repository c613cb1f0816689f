"""Export a Hugging Face sequence classifier to ONNX and check it against PyTorch.

The ONNX graph is the hand-off to every runtime: ONNX Runtime serves it on CPU, trtexec
builds TensorRT engines from it. Inputs `input_ids` and `attention_mask` (INT64, [batch,
sequence]) and output `logits` (FP32, [batch, num_labels]) match config.pbtxt.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerFast

from docq.text.packing import IdsAndMask

OPSET = 18
INPUTS = ("input_ids", "attention_mask")
OUTPUT = "logits"


class _LogitsOnly(torch.nn.Module):
    """The classifier as a function of (input_ids, attention_mask) returning logits only."""

    def __init__(self, model: PreTrainedModel) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask).logits


# Traced through the model's own tokenizer: its ids are rows of the model's embedding.
TRACE_TEXTS = ("This is a test.", "Test.")


def trace_inputs(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerFast | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask) to trace with: two texts encoded by `tokenizer`, the
    second padded with the tokenizer's pad id (RoBERTa's is 1, BERT's 0).

    Without a tokenizer (a caller that has none), ids 2.. of the model's vocabulary padded
    with its config's pad id: any id the embedding has traces the same graph.
    """
    if tokenizer is not None:
        rows = [tokenizer(t)["input_ids"] for t in TRACE_TEXTS]
        pad = tokenizer.pad_token_id
    else:
        vocab = int(model.config.vocab_size)
        rows = [[(2 + i) % vocab for i in range(6)], [(2 + i) % vocab for i in range(3)]]
        pad = model.config.pad_token_id
    pad = 0 if pad is None else int(pad)
    # Two texts a tokenizer encodes to one length still get a padded column.
    longest = max(len(r) for r in rows) + (len({len(r) for r in rows}) == 1)
    ids = torch.full((len(rows), longest), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), longest), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row)
        mask[i, : len(row)] = 1
    return ids, mask


def export(
    model: PreTrainedModel, path: Path, tokenizer: PreTrainedTokenizerFast | None = None
) -> onnx.ModelProto:
    """Write `model` as ONNX (opset 18, dynamic batch and sequence axes); return the checked graph.

    Traced with ids from `tokenizer`, the model's own (see trace_inputs). The graph is
    checked with `onnx.checker` (full check, shape inference included).
    """
    # The exporter restores the wrapper's training flag onto every submodule when it ends:
    # a fresh wrapper is in training mode and would switch dropout on in `model`.
    wrapper = _LogitsOnly(model).eval()
    # Trace with a padded row: an all-ones mask lets transformers skip the mask entirely,
    # and the trace would then ignore attention_mask for every input.
    ids, mask = trace_inputs(model, tokenizer)
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"}}
    with warnings.catch_warnings():
        # The TorchScript exporter warns about Python control flow in transformers' mask
        # helpers; the padded trace input above is what makes that control flow right.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            wrapper,
            (ids, mask),
            str(path),
            dynamo=False,  # the dynamo exporter needs onnxscript, which this project does not ship
            opset_version=OPSET,
            input_names=list(INPUTS),
            output_names=[OUTPUT],
            dynamic_axes={**axes, OUTPUT: {0: "batch"}},
            do_constant_folding=True,
        )
    model.eval()
    graph = onnx.load(str(path))
    onnx.checker.check_model(graph, full_check=True)
    return graph


def session(path: Path, threads: int = 2) -> ort.InferenceSession:
    """An ONNX Runtime CPU session configured like the onnx-cpu runtime in Triton."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def run(sess: ort.InferenceSession, batch: IdsAndMask) -> np.ndarray:
    ids, mask = batch
    return sess.run([OUTPUT], {"input_ids": ids, "attention_mask": mask})[0]


@torch.inference_mode()
def max_abs_diff(
    model: PreTrainedModel, sess: ort.InferenceSession, batches: Sequence[IdsAndMask]
) -> float:
    """Largest |ONNX Runtime logit - PyTorch logit| over `batches`."""
    model.eval()
    worst = 0.0
    for ids, mask in batches:
        expected = model(
            input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask)
        ).logits
        worst = max(worst, float(np.abs(run(sess, (ids, mask)) - expected.numpy()).max()))
    return worst
