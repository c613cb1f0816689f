"""The parity gate's runners: (input_ids, attention_mask) -> logits, each a way a model can
be served, and `candidate`, which reads one from `docq validate --candidate`'s form.
"""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path

import numpy as np
import numpy.typing as npt
import torch
from transformers import PreTrainedModel

from conversion.evaluate import Runner

TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def torch_runner(model: PreTrainedModel, device: str = "cpu", dtype: str = "fp32") -> Runner:
    """The checkpoint in PyTorch on `device` in `dtype` (fp32 is the reference).

    FP32 on CUDA is true FP32: TF32 matrix maths is switched off, or it would not be a
    reference. Logits come back as float32 whatever the dtype.
    """
    if dtype not in TORCH_DTYPES:
        raise ValueError(f"dtype must be one of {sorted(TORCH_DTYPES)}, not {dtype!r}")
    if device.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    moved: torch.nn.Module = copy.deepcopy(model)
    moved = moved.to(device=device, dtype=TORCH_DTYPES[dtype]).eval()

    @torch.inference_mode()
    def run(batch: tuple[np.ndarray, np.ndarray]) -> npt.NDArray[np.float32]:
        ids, mask = (torch.from_numpy(a).to(device) for a in batch)
        logits = moved(input_ids=ids, attention_mask=mask).logits
        return logits.float().cpu().numpy()

    return run


def onnx_runner(path: Path, threads: int = 2) -> Runner:
    """ONNX Runtime on CPU, configured as the onnx-cpu runtime serves it."""
    from conversion import export

    session = export.session(path, threads)
    return lambda batch: export.run(session, batch).astype(np.float32, copy=False)


def openvino_runner(path: Path, precision: str = "fp32", threads: int = 2) -> Runner:
    """OpenVINO on CPU through the openvino-cpu runtime's own model code (loaded in-process
    from serving/runtimes/, as Triton's stub would run it), on the IR at `path`."""
    from serving import pb_stub
    from serving.runtimes import SOURCES

    if path.name != "model.xml":
        raise ValueError(f"the openvino-cpu runtime serves model.xml, not {path.name}")
    served = pb_stub.instance(
        pb_stub.load_runtime(SOURCES / "openvino_cpu.py"),
        path.parent,
        "CPU",
        0,
        precision=precision,
        intra_op_threads=str(threads),
    )
    return lambda batch: served._run(*batch)


def triton_runner(url: str, model: str, timeout_s: float = 300.0) -> Runner:
    """The model as a running Triton serves it, over gRPC."""
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(url)

    def run(batch: tuple[np.ndarray, np.ndarray]) -> npt.NDArray[np.float32]:
        inputs = []
        for name, array in zip(("input_ids", "attention_mask"), batch, strict=True):
            tensor = grpcclient.InferInput(name, list(array.shape), "INT64")
            tensor.set_data_from_numpy(np.ascontiguousarray(array))
            inputs.append(tensor)
        result = client.infer(model, inputs, client_timeout=timeout_s)
        out = result.as_numpy("logits")
        assert out is not None
        return out.astype(np.float32, copy=False)

    return run


def tensorrt_runner(plan: Path) -> Runner:
    """A TensorRT engine (TensorRT >= 10 and a CUDA GPU), through torch's CUDA tensors."""
    import tensorrt as trt

    logger = trt.Logger(trt.Logger.WARNING)
    engine = trt.Runtime(logger).deserialize_cuda_engine(plan.read_bytes())
    context = engine.create_execution_context()

    def run(batch: tuple[np.ndarray, np.ndarray]) -> npt.NDArray[np.float32]:
        tensors = {
            name: torch.from_numpy(np.ascontiguousarray(a)).cuda()
            for name, a in zip(("input_ids", "attention_mask"), batch, strict=True)
        }
        for name, t in tensors.items():
            context.set_input_shape(name, tuple(t.shape))
            context.set_tensor_address(name, t.data_ptr())
        out = torch.empty(tuple(context.get_tensor_shape("logits")), device="cuda")
        context.set_tensor_address("logits", out.data_ptr())
        stream = torch.cuda.current_stream()
        if not context.execute_async_v3(stream.cuda_stream):
            raise RuntimeError("TensorRT execution failed")
        stream.synchronize()
        return out.cpu().numpy()

    return run


def cached(run: Runner) -> Runner:
    """`run`, remembering its logits per batch: one reference run serves several candidates."""
    memo: dict[bytes, npt.NDArray[np.float32]] = {}

    def cached_run(batch: tuple[np.ndarray, np.ndarray]) -> npt.NDArray[np.float32]:
        ids, mask = batch
        key = hashlib.blake2b(
            np.asarray(ids.shape).tobytes() + ids.tobytes() + mask.tobytes(), digest_size=16
        ).digest()
        if key not in memo:
            memo[key] = run(batch)
        return memo[key]

    return cached_run


def candidate(spec: str, model: PreTrainedModel, threads: int = 2) -> Runner:
    """A runner from its command-line form.

    onnx:PATH               ONNX Runtime on CPU (FP32, fused or quantized graph)
    openvino:[PREC:]PATH    OpenVINO on CPU, the IR at PATH (model.xml), in fp32 or bf16
    torch:DTYPE[:DEVICE]    the reference checkpoint in fp16/bf16/fp32 on cpu or cuda[:N]
    triton:HOST:PORT/MODEL  a model a running Triton serves (the real runtime)
    tensorrt:PATH           a TensorRT engine (needs tensorrt and a GPU)
    """
    kind, _, rest = spec.partition(":")
    if kind == "onnx" and rest:
        return onnx_runner(Path(rest), threads)
    if kind == "openvino" and rest:
        precision, _, path = rest.partition(":")
        if precision not in ("fp32", "bf16"):
            precision, path = "fp32", rest
        return openvino_runner(Path(path), precision, threads)
    if kind == "torch" and rest:
        dtype, _, device = rest.partition(":")
        return torch_runner(model, device or "cpu", dtype)
    if kind == "triton" and "/" in rest:
        url, _, name = rest.rpartition("/")
        return triton_runner(url, name)
    if kind == "tensorrt" and rest:
        return tensorrt_runner(Path(rest))
    raise ValueError(
        f"cannot read candidate {spec!r}: expected onnx:PATH, openvino:[PREC:]PATH, "
        "torch:DTYPE[:DEVICE], triton:HOST:PORT/MODEL or tensorrt:PATH"
    )
