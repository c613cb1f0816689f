"""conversion/tensorrt.py: profile shapes, the trtexec command and the config they imply.

TensorRT cannot be installed on this project's machines; the last test builds and runs a
real engine and runs only where `tensorrt` imports and a CUDA GPU is present.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tritonclient.grpc import model_config_pb2 as mc

from conversion import tensorrt
from conversion.convert import Target
from conversion.tensorrt import Profile, Shape


def test_default_profile_is_the_old_teams() -> None:
    prof = tensorrt.profile()
    assert (prof.min, prof.opt, prof.max) == (Shape(1, 1), Shape(2, 512), Shape(7, 512))
    assert str(prof) == "1x1 / 2x512 / 7x512"
    assert prof.max_batch_size == 7


@pytest.mark.parametrize(
    ("batch", "seq", "opt", "expected"),
    [
        (8, 512, 2, ((1, 1), (2, 512), (8, 512))),
        (16, 256, 4, ((1, 1), (4, 256), (16, 256))),
        (1, 128, 2, ((1, 1), (1, 128), (1, 128))),  # opt never exceeds max
    ],
)
def test_profile_follows_the_batching_settings(
    batch: int, seq: int, opt: int, expected: tuple[tuple[int, int], ...]
) -> None:
    prof = tensorrt.profile(batch, seq, opt)
    assert tuple((s.batch, s.sequence) for s in (prof.min, prof.opt, prof.max)) == expected


def test_profile_refuses_unordered_shapes() -> None:
    with pytest.raises(ValueError, match="min <= opt <= max"):
        Profile(Shape(1, 1), Shape(8, 512), Shape(4, 512))
    with pytest.raises(ValueError, match="sequence"):
        Profile(Shape(1, 0), Shape(1, 1), Shape(1, 1))


def test_trtexec_command_builds_an_fp16_engine_for_the_profile() -> None:
    cmd = tensorrt.trtexec_command(Path("m.onnx"), Path("m.plan"), tensorrt.profile(), "fp16")
    assert cmd == [
        "trtexec",
        "--onnx=m.onnx",
        "--saveEngine=m.plan",
        "--minShapes=input_ids:1x1,attention_mask:1x1",
        "--optShapes=input_ids:2x512,attention_mask:2x512",
        "--maxShapes=input_ids:7x512,attention_mask:7x512",
        "--memPoolSize=workspace:4096M",
        "--skipInference",
        "--fp16",
    ]


def test_trtexec_command_fp32_has_no_reduced_precision_flag() -> None:
    cmd = tensorrt.trtexec_command(Path("m.onnx"), Path("m.plan"), tensorrt.profile(), "fp32")
    assert "--fp16" not in cmd
    with pytest.raises(ValueError, match="precision"):
        tensorrt.trtexec_command(Path("m.onnx"), Path("m.plan"), tensorrt.profile(), "int8")


def test_tensorrt_config_max_batch_size_is_the_engines_max_shape() -> None:
    target = Target(name="m", runtime="tensorrt", max_batch_size=7, max_seq_len=512, opt_batch=2)
    config = target.classifier_config(num_labels=6)
    from conversion import pbtxt

    built = pbtxt.build(config)
    assert built.platform == "tensorrt_plan" and not built.backend
    assert built.max_batch_size == target.profile().max.batch == 7
    assert [(g.kind, g.count) for g in built.instance_group] == [
        (mc.ModelInstanceGroup.KIND_GPU, 1)
    ]
    params = {k: v.string_value for k, v in built.parameters.items()}
    assert params["profile"] == "1x1 / 2x512 / 7x512"
    assert params["precision"] == "fp16"
    assert params["max_seq_len"] == "512"
    # The warm-up sample lies inside the engine's profile.
    (warmup,) = built.model_warmup
    assert warmup.batch_size <= 7 and list(warmup.inputs["input_ids"].dims) == [16]


def test_building_without_tensorrt_says_where_to_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tensorrt, "available", lambda: None)
    with pytest.raises(RuntimeError, match="NGC Triton container"):
        tensorrt.build_engine(tmp_path / "m.onnx", tmp_path / "m.plan", tensorrt.profile())


def test_engine_builds_and_matches_onnx_runtime(tiny_checkpoint: Path, tmp_path: Path) -> None:
    """Only where TensorRT and a GPU exist (the NGC container): a real engine, run."""
    trt = pytest.importorskip("tensorrt")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    import numpy as np

    from conversion import convert, export, parity

    target = Target(name="tiny", runtime="tensorrt", precision="fp32", max_seq_len=64)
    staged = convert.stage(tiny_checkpoint, target, tmp_path / "stage")
    engine = trt.Runtime(trt.Logger()).deserialize_cuda_engine(
        (staged.folder / "model.plan").read_bytes()
    )
    assert engine.get_tensor_profile_shape("input_ids", 0)[2] == (8, 64)
    run = parity.tensorrt_runner(staged.folder / "model.plan")
    session = export.session(tmp_path / "stage" / "model.onnx")
    for batch in convert.sample_batches(30522, 64):
        np.testing.assert_allclose(run(batch), export.run(session, batch), atol=1e-3)
