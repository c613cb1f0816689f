"""bench/gpu/serve.py's parts with no server: variants, requests and the report."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.gpu import clients, report, serve
from bench.gpu.model import DEFAULT, MAX_LEN, PARAM, Variant, publish_variant
from conversion.defaults import TORCH_GPU


def test_a_variant_spec_gives_target_fields_and_runtime_parameters() -> None:
    v = Variant.parse("fp8:precision=fp8,max_batch_size=32,param.sdpa_backend=cudnn")
    assert v == Variant("fp8", {"precision": "fp8", "max_batch_size": 32, 
                                f"{PARAM}sdpa_backend": "cudnn"})  # fmt: skip
    assert Variant.parse("plain") == Variant("plain", {})
    assert [x.name for x in serve.parse_args([]).variant] == [DEFAULT]
    assert serve.parse_args(["--variant", "plain"]).variant == [Variant("plain", {})]
    with pytest.raises(SystemExit, match="no Target field"):
        serve.parse_args(["--variant", "bad:no_such_field=1"])


def test_a_variant_sets_the_batch_size_and_the_workers_token_budget(tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text("{}")
    small = Variant.parse("b8:max_batch_size=8,max_tokens=2048")
    config = publish_variant(tmp_path / "repo", checkpoint, small, on_gpu=False)
    assert config.max_batch_size == 8
    assert config.parameters["token_budget"].string_value == "2048"
    assert config.parameters["max_seq_len"].string_value == str(MAX_LEN)
    plain = publish_variant(tmp_path / "repo", checkpoint, Variant("d"), on_gpu=False)
    assert plain.max_batch_size == TORCH_GPU.max_batch_size
    assert plain.parameters["token_budget"].string_value == str(TORCH_GPU.max_batch_size * MAX_LEN)
    assert (tmp_path / "repo" / "b8" / "1" / "model.py").is_file()


def test_a_partial_last_row_is_padded_and_counted_as_real_tokens() -> None:
    ids, mask = clients.windows(7, 512, seed=3, last=0.6)
    assert ids.shape == mask.shape == (7, 512)
    assert int(mask.sum()) == clients.real_tokens((7, 512, 0.6)) == 6 * 512 + 307
    assert (ids[-1, 307:] == 1).all() and (ids[:, 0] == 0).all()
    assert [clients.key(s) for s in clients.SHAPES][-2:] == ["7x512", "7x512p"]


def _result(seq_s: dict[str, float], p50_ms: float, old_seq_s: float) -> dict:
    """A run's result as serve.main() records it, with only what the report reads."""
    served = {
        clients.key(s): {
            "one_at_a_time": {"p50_ms": p50_ms, "p95_ms": 2 * p50_ms},
            "sweep": [
                {"in_flight": 8, "seq_s": seq_s[clients.key(s)] / 2, "tokens_s": 1},
                {
                    "in_flight": 16,
                    "seq_s": seq_s[clients.key(s)],
                    "tokens_s": round(seq_s[clients.key(s)] * clients.real_tokens(s) / s[0]),
                },
            ],
        }
        for s in clients.SHAPES
    }
    old = {clients.key(s): {"p50_ms": 10.0, "seq_s": old_seq_s} for s in clients.SHAPES}
    return {"variants": [{"name": "d"}], "served": {"d": served}, "old_runtime": old}


def test_the_report_takes_each_shapes_best_level_against_the_old_runtime() -> None:
    seq_s = {"1x512": 500.0, "2x512": 1500.0, "7x512": 1750.0, "7x512p": 1700.0}
    table = report.serve_table(_result(seq_s, p50_ms=2.0, old_seq_s=100.0))
    by = {row["shape"]: row for row in table}
    assert list(by) == [clients.key(s) for s in clients.SHAPES]
    assert by["2x512"]["seq_s"] == 1500.0 and by["2x512"]["in_flight"] == 16
    assert by["2x512"]["ratio"] == 15.0 and by["7x512p"]["old_seq_s"] == 100.0
    got = report.serve_targets(table)
    assert {k: t["met"] for k, t in got.items()} == {
        "p50_ms_1x512": True,
        "seq_s_7x512": True,
        "ratio_2x512": True,
        "tokens_7x512p_over_full": False,  # 1700 x 3379 real tokens < 1750 x 3584
    }
    slow = report.serve_targets(report.serve_table(_result(seq_s, 3.0, 200.0)))
    assert not slow["p50_ms_1x512"]["met"] and not slow["ratio_2x512"]["met"]


def test_a_variant_that_failed_to_load_is_reported_and_the_next_one_summarised(
    capsys: pytest.CaptureFixture[str],
) -> None:
    seq_s = {"1x512": 500.0, "2x512": 1500.0, "7x512": 1750.0, "7x512p": 1700.0}
    result = _result(seq_s, p50_ms=2.0, old_seq_s=100.0)
    result["variants"] = [{"name": "cudnn", "overrides": {}}, *result["variants"]]
    result["load_failed"] = {"cudnn": "Internal: AcceleratorError: capture invalidated\nAt: ..."}
    result["table"] = report.serve_table(result)  # the served "d", not the failed first
    result["targets"] = report.serve_targets(result["table"])
    result["device"] = "NVIDIA H200"
    assert result["table"][1]["seq_s"] == 1500.0  # 2x512
    result["variants"].append({"name": "hf", "label": "hf [engine=hf]"})  # served after "d"
    result["served"]["hf"] = result["served"]["d"]
    report.show_serve(result)
    out = capsys.readouterr().out
    assert "variant cudnn not served, failed to load: Internal: AcceleratorError" in out
    assert "variant hf [engine=hf]: p50" in out  # its label printed, not read as markup


def test_the_served_default_is_set_against_each_in_process_reference() -> None:
    seq_s = {"1x512": 500.0, "2x512": 1500.0, "7x512": 1750.0, "7x512p": 1700.0}
    table = report.serve_table(_result(seq_s, p50_ms=2.0, old_seq_s=100.0))
    refs = {
        "hf-fp16-eager": {"shapes": {"1x512": {"p50_ms": 3.0, "seq_s": 333.3},
                                     "2x512": {"p50_ms": 4.0, "seq_s": 500.0},
                                     "7x512": {"p50_ms": 7.0, "seq_s": 1000.0},
                                     "126x512": {"p50_ms": 90.0, "seq_s": 1400.0}}},
        "partial": {"shapes": {"1x512": {"p50_ms": 2.5, "seq_s": 400.0}}},
    }  # fmt: skip
    got = report.against_references(table, refs)
    hf = got["hf-fp16-eager"]
    assert hf["latency_1x512_ratio"] == 1.5  # 3.0 ms in-process against 2.0 served
    assert hf["best_seq_s_7x512"] == 1400.0 and hf["ratio_7x512"] == 1.25  # its best batch
    assert hf["ratio_2x512"] == round(1500 / 1400, 2)
    assert got["partial"] == {"p50_1x512_ms": 2.5, "latency_1x512_ratio": 1.25}
    assert "ratio_7x512" not in got["partial"]  # not measured: no ratio made up
