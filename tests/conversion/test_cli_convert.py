"""`docq convert`'s options reach the Target it builds (the torch-gpu engine choices)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conversion import cli
from conversion import convert as conv


class Stop(Exception):
    """Raised where the conversion would start: the test only reads the Target."""


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What `docq convert` would stage: the Target, under "target" (the conversion stops)."""
    seen: dict[str, Any] = {}

    def stage(checkpoint: Path, target: conv.Target, workdir: Path) -> None:
        seen["target"] = target
        raise Stop

    monkeypatch.setattr(conv, "stage", stage)
    return seen


def test_engine_gelu_precision_and_token_budget_reach_the_target(
    seen: dict[str, Any], tmp_path: Path
) -> None:
    args = ["convert", str(tmp_path), "--name", "m", "--runtime", "torch-gpu"]
    args += ["--precision", "fp8", "--gelu", "erf", "--max-tokens", "4096"]
    result = CliRunner().invoke(cli.app(), args)
    assert isinstance(result.exception, Stop), result.output
    target = seen["target"]
    assert (target.engine, target.gelu, target.dtype, target.max_tokens) == (
        "flat", "erf", "fp8", 4096
    )  # fmt: skip
    result = CliRunner().invoke(cli.app(), [*args, "--fp8-products", "qkv+out+up"])
    assert isinstance(result.exception, Stop), result.output
    assert seen["target"].fp8_products == "qkv+out+up"
    params = seen["target"].classifier_config(2)
    assert "qkv+out+up" in str(params)
    with pytest.raises(ValueError, match="fp8_products"):
        conv.Target("m", "torch-gpu", precision="fp8", fp8_products="qkv+gelu")
    with pytest.raises(ValueError, match="only precision fp8"):
        conv.Target("m", "torch-gpu", fp8_products="qkv")
    result = CliRunner().invoke(cli.app(), [*args[:6], "--engine", "hf"])
    assert isinstance(result.exception, Stop), result.output
    assert seen["target"].engine == "hf"


def test_the_attention_kernel_reaches_the_runtime_parameters(
    seen: dict[str, Any], tmp_path: Path
) -> None:
    args = ["convert", str(tmp_path), "--name", "m", "--runtime", "torch-gpu"]
    result = CliRunner().invoke(cli.app(), [*args, "--attention", "flash"])
    assert isinstance(result.exception, Stop), result.output
    extra = seen["target"].classifier_config(2).extra_parameters
    assert extra["attention"] == "flash"
    assert (
        conv.Target("m", "torch-gpu").classifier_config(2).extra_parameters["attention"] == "cudnn"
    )
    with pytest.raises(ValueError, match="attention must be one of"):
        conv.Target("m", "torch-gpu", attention="fa3")
    result = CliRunner().invoke(cli.app(), [*args, "--small-attention", "triton"])
    assert isinstance(result.exception, Stop), result.output
    assert seen["target"].classifier_config(2).extra_parameters["small_attention"] == "triton"
    assert extra["small_attention"] == "flash"  # the default
    with pytest.raises(ValueError, match="small_attention must be one of"):
        conv.Target("m", "torch-gpu", small_attention="fa3")
    result = CliRunner().invoke(cli.app(), [*args, "--gemm", "triton"])
    assert isinstance(result.exception, Stop), result.output
    assert seen["target"].classifier_config(2).extra_parameters["gemm"] == "triton"
    assert extra["gemm"] == "cublas"  # the default
    with pytest.raises(ValueError, match="gemm must be one of"):
        conv.Target("m", "torch-gpu", gemm="cutlass")
