"""docq/models.py: a served model's spec read from the config Triton returns for it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from docq.errors import ModelError
from docq.models import ModelSpec


def triton_config(*ragged: bool, **parameters: str) -> dict[str, Any]:
    """A model config as gRPC `get_model_config(as_json=True)["config"]` has it: protobuf
    JSON, where a false bool such as allow_ragged_batch is left out."""
    inputs: list[dict[str, Any]] = [
        {"name": name, "data_type": "TYPE_INT64", "dims": ["-1"]}
        for name in ("input_ids", "attention_mask")
    ]
    for i, flag in zip(inputs, ragged, strict=False):
        if flag:
            i["allow_ragged_batch"] = True
    return {
        "name": "m",
        "max_batch_size": 16,
        "input": inputs,
        "output": [{"name": "logits", "dims": ["3"], "label_filename": "labels.txt"}],
        "parameters": {k: {"string_value": v} for k, v in parameters.items()},
    }


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "labels.txt").write_text("a\nb\nc\n")
    return tmp_path


def test_limits_and_windowing_come_from_the_config(repository: Path) -> None:
    spec = ModelSpec.from_triton_config(
        triton_config(max_seq_len="256", stride="32", token_budget="2048"), repository
    )
    assert (spec.max_batch_size, spec.max_seq_len, spec.stride) == (16, 256, 32)
    assert spec.labels == ("a", "b", "c") and spec.budget == 2048
    assert ModelSpec.from_triton_config(triton_config(), repository).budget == 16 * 512


def test_a_model_whose_inputs_allow_ragged_batches_is_ragged(repository: Path) -> None:
    assert ModelSpec.from_triton_config(triton_config(True, True), repository).ragged


def test_a_model_is_padded_unless_every_input_is_ragged(repository: Path) -> None:
    assert not ModelSpec.from_triton_config(triton_config(), repository).ragged
    assert not ModelSpec.from_triton_config(triton_config(True, False), repository).ragged
    no_inputs = triton_config()
    del no_inputs["input"]
    assert not ModelSpec.from_triton_config(no_inputs, repository).ragged


def test_a_model_without_labels_is_no_classifier(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="not a usable docq classifier"):
        ModelSpec.from_triton_config(triton_config(), tmp_path)
