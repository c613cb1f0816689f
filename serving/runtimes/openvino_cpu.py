"""Triton Python-backend model for the `openvino-cpu` runtime: OpenVINO on CPU.

Installed as `model_repository/<name>/<version>/model.py` (one import of this module) by
`docq convert --runtime openvino-cpu`, beside the OpenVINO IR it compiles (`model.xml`,
`model.bin`: FP32 weights, converted from the checked ONNX export). It runs inside Triton's
Python-backend stub with the project virtualenv's packages (openvino, numpy).

The `precision` parameter is OpenVINO's inference precision: `fp32` by default. OpenVINO's
CPU plugin would otherwise pick bf16 by itself on a CPU with AMX or AVX-512 BF16, which is
faster and fails docq's parity gate (docs/performance.md, Parity), so the hint is always set.
The request loop (reading, padding, splitting, errors) is execute.py, of the same package
(copied beside model.py as `docq_runtime/`); this file only compiles the model and runs it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov

from .execute import OUTPUT, execute, parameter

# docq precision name -> OpenVINO's inference precision hint
PRECISIONS = {"fp32": "f32", "bf16": "bf16"}


def compile_model(path: Path, precision: str, threads: int) -> ov.CompiledModel:
    """The IR at `path` compiled for this CPU: one stream (one execution at a time per
    instance, as onnx-cpu runs), `threads` inference threads, `precision` maths."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, not {precision!r}")
    core = ov.Core()
    return core.compile_model(
        str(path),
        "CPU",
        {
            "INFERENCE_PRECISION_HINT": PRECISIONS[precision],
            "INFERENCE_NUM_THREADS": threads,
            "NUM_STREAMS": 1,
            "PERFORMANCE_HINT": "LATENCY",
        },
    )


def vocabulary_size(model: Any) -> int | None:
    """Rows of the embedding table that `input_ids` indexes (its first Gather, through any
    Convert), or None if the graph does not show one. OpenVINO's Gather fills an
    out-of-range index with zeros instead of failing, so execute() checks ids against it."""
    for param in model.get_parameters():
        if "input_ids" not in param.output(0).get_names():
            continue
        nodes = [t.get_node() for t in param.output(0).get_target_inputs()]
        for _ in range(3):
            following = []
            for node in nodes:
                if node.get_type_name() == "Gather":
                    shape = node.input_value(0).get_partial_shape()
                    if shape.rank.get_length() == 2 and shape[0].is_static:
                        return int(shape[0].get_length())
                elif node.get_type_name() == "Convert":
                    following += [t.get_node() for t in node.output(0).get_target_inputs()]
            nodes = following
    return None


class TritonPythonModel:
    """Runs an OpenVINO sequence classifier; pads each execute()'s requests into one call."""

    def initialize(self, args: dict[str, str]) -> None:
        config = json.loads(args["model_config"])
        path = Path(args["model_repository"]) / args["model_version"] / "model.xml"
        self.compiled = compile_model(
            path,
            parameter(config, "precision", "fp32"),
            int(parameter(config, "intra_op_threads", "1")),
        )
        # One request object, reused: an instance runs one execution at a time.
        self.request = self.compiled.create_infer_request()
        self.vocab_size = vocabulary_size(ov.Core().read_model(str(path)))

    def execute(self, requests: list[Any]) -> list[Any] | None:
        """One response per request, in order (execute.py pads them into one call)."""
        return execute(requests, self._run, "openvino", vocab_size=self.vocab_size)

    def _run(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        result = self.request.infer({"input_ids": input_ids, "attention_mask": attention_mask})
        logits = result[self.compiled.output(OUTPUT)]
        return np.array(logits, dtype=np.float32)  # a copy: the request reuses its buffer

    def finalize(self) -> None:
        self.request = None
        self.compiled = None
