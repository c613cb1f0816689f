"""What the GPU benches publish is what `docq convert` builds: one table of defaults
(conversion/defaults.py), read by the converter, its help, the benches and docs/performance.md.
A default changed in one place and not the others fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from google.protobuf import json_format
from typer.testing import CliRunner

from bench.gpu import pipeline, serve
from bench.gpu.model import DEFAULT, LABELS, MAX_LEN, Variant, publish_variant
from conversion import cli, pbtxt
from conversion.convert import Target
from conversion.defaults import DEFAULTS, TORCH_GPU, config_line

REPO = Path(__file__).resolve().parents[2]
# The line each GPU section of docs/performance.md opens with: what its runs convert with.
STATED = re.compile(
    r"^Configuration \(the converter's torch-gpu defaults.*?\):\n`([^`]*)`", re.M | re.S
)


@pytest.mark.parametrize("section", ["## GPU: the whole pipeline", "## GPU: the served runtime"])
def test_the_performance_doc_states_the_converters_defaults(section: str) -> None:
    text = (REPO / "docs" / "performance.md").read_text()
    assert section in text, f"docs/performance.md has no {section!r}"
    stated = STATED.search(text.split(section, 1)[1].split("\n## ", 1)[0])
    assert stated, f"{section} states no configuration line"
    assert stated.group(1) == config_line("torch-gpu")


def test_the_converter_builds_the_defaults_and_its_help_prints_them() -> None:
    config = pbtxt.build(Target("m", "torch-gpu").classifier_config(3))
    params = {k: v.string_value for k, v in config.parameters.items()}
    assert config.max_batch_size == TORCH_GPU.max_batch_size == 128
    assert config.dynamic_batching.max_queue_delay_microseconds == TORCH_GPU.max_queue_delay_us
    assert [g.count for g in config.instance_group] == [TORCH_GPU.instance_count]
    assert params["token_budget"] == str(TORCH_GPU.max_batch_size * 512)
    assert (params["gelu"], params["attention"], params["small_attention"], params["gemm"]) == (
        TORCH_GPU.gelu, TORCH_GPU.attention, TORCH_GPU.small_attention, TORCH_GPU.gemm
    )  # fmt: skip
    assert params["overlap"] == "true"
    assert Target("c", "onnx-cpu").max_batch_size == DEFAULTS["onnx-cpu"].max_batch_size == 8
    assert Target("m", "torch-gpu", max_batch_size=8).max_batch_size == 8
    shown = " ".join(CliRunner().invoke(cli.app(), ["convert", "--help"]).output.split())
    assert f"torch-gpu: {config_line('torch-gpu')}" in shown.replace(" │ ", " ")
    assert "0.05 s at --max-batch-size 8" in shown.replace(" │ ", " ")  # the latency cost


def test_the_benches_convert_with_the_defaults_and_no_overrides(tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text('{"id2label": {"0": "a", "1": "b"}}')
    assert pipeline.parse_args(["--out", "x.json"]).model.overrides == {}
    (default,) = serve.parse_args([]).variant
    assert (default.name, default.overrides, default.label) == (DEFAULT, {}, DEFAULT)
    served = publish_variant(tmp_path / "repo", checkpoint, default, on_gpu=True)
    built = pbtxt.build(Target(DEFAULT, "torch-gpu", max_seq_len=MAX_LEN).classifier_config(
        len(LABELS)))  # fmt: skip
    assert json_format.MessageToDict(served) == json_format.MessageToDict(built)
    publish_variant(tmp_path / "gate", checkpoint, Variant("m", {}), True, ["a", "b"])  # the gate's
    gated = pbtxt.read(tmp_path / "gate" / "m" / "config.pbtxt")
    assert json_format.MessageToDict(gated) == json_format.MessageToDict(
        pbtxt.build(Target("m", "torch-gpu", max_seq_len=512).classifier_config(2))
    )


def test_a_variant_off_the_defaults_says_so_in_its_label() -> None:
    assert Variant.parse("b8:max_batch_size=8").label == "b8 [max_batch_size=8]"
    assert Variant.parse("same:max_batch_size=128,gelu=tanh").label == "same"
    assert Variant.parse("noov:param.overlap=false").label == "noov [param.overlap=false]"
    assert Variant.parse("fp8:precision=fp8").label == "fp8 [precision=fp8]"
    with pytest.raises(SystemExit, match="must keep the converter's defaults"):
        Variant.parse("default:gelu=erf")
