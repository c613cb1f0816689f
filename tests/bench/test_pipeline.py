"""bench/pipeline.py: the tuned baseline's sweep, the ceiling's batches (bench/docq_jobs.py),
the numbers derived."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import numpy as np
import pytest

from bench import docq_jobs, documents, pipeline, procs, report
from bench.baseline import sweep
from bench.procs import listener
from conversion import pbtxt
from corpus.doc_type import generate
from docq.models import ModelSpec
from docq.text.packing import pack
from docq.text.windowing import Window

REPO = Path(__file__).resolve().parents[2]
SPEC = ModelSpec(
    name="doc-type",
    max_batch_size=8,
    max_seq_len=512,
    stride=64,
    aggregation="mean",
    labels=("a", "b"),
    tokenizer_dir=REPO / "model_repository" / "doc-type" / "tokenizer",
    runtime="onnx-cpu",
)


def _window(doc: int, length: int) -> Window:
    return Window(doc=doc, ids=np.ones(length, dtype=np.int64))


@pytest.fixture(scope="module")
def windows() -> list[Window]:
    return documents.windows_of(generate(120, 7), SPEC)


def test_baseline_threads_times_workers_is_the_cores() -> None:
    configs = sweep.baseline_configs(2, [4, 1, 2], 4)
    assert [(c.workers, c.threads, c.clients) for c in configs] == [
        (1, 2, 4),
        (2, 1, 8),
        (4, 1, 16),  # more workers than cores: one thread each, the least there is
    ]
    on16 = sweep.baseline_configs(16, [1, 2, 4, 8, 16], 2)
    assert [c.workers * c.threads for c in on16] == [16] * 5
    assert [c.clients for c in on16] == [2, 4, 8, 16, 32]


def test_make_bench_options_for_another_machine() -> None:
    args = pipeline.parse_args(
        ["--cores", "16", "--baseline-workers", "2,4,8", "--docq-workers", "3"]
    )
    assert args.cores == 16 and args.baseline_workers == [2, 4, 8] and args.docq_workers == 3
    defaults = pipeline.parse_args([])
    assert defaults.baseline_workers == [1, 2, 4] and docq_jobs.ACCEPT_UPLOADS >= 200
    assert defaults.out.parent.name == "results"  # a rehearsal never lands in a committed file


def test_cores_pins_the_bench_and_its_children() -> None:
    code = (
        "import os, subprocess; from bench.procs import use_cores; use_cores(1); "
        "print(len(os.sched_getaffinity(0)), "
        "subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["1", "1"]
    with pytest.raises(ValueError, match="--cores"):
        procs.use_cores(10_000)


def test_ceiling_batches_cover_every_window_within_the_models_limits(
    windows: list[Window],
) -> None:
    budgeted = replace(SPEC, token_budget=1536)  # at most 3 windows of 512
    batches = docq_jobs.ceiling_batches(windows, budgeted)
    rows = sorted(r for b in batches for r in b.rows)
    assert rows == list(range(len(windows)))
    for b in batches:
        assert len(b.rows) <= budgeted.max_batch_size
        assert b.computed_tokens <= budgeted.budget
    assert max(len(b.rows) for b in batches) == budgeted.max_batch_size  # short windows


def test_the_ceiling_never_pads_more_than_packing_per_shard(windows: list[Window]) -> None:
    whole = sum(b.computed_tokens for b in docq_jobs.ceiling_batches(windows, SPEC))
    for shard in (8, 64):  # the old Triton-alone packed per shard
        docs = sorted({w.doc for w in windows})
        per_shard = 0
        for start in range(0, len(docs), shard):
            chosen = set(docs[start : start + shard])
            per_shard += sum(
                b.computed_tokens for b in pack([w for w in windows if w.doc in chosen], 8, 4096)
            )
        assert whole <= per_shard


def test_baseline_pads_each_document_to_its_own_longest_window() -> None:
    ws = [_window(0, 512), _window(0, 100), _window(1, 50)]
    # doc 0: 2 x 512 computed for 612 real; doc 1: 50 for 50. Never 3 x 512.
    assert documents.baseline_padding(ws) == pytest.approx(662 / 1074)
    padding = documents.padding_report(ws, pack(ws, 8))
    assert padding["pad_to_512_efficiency"] == round(662 / 1536, 4)
    assert padding["baseline_padding_efficiency"] > padding["pad_to_512_efficiency"]


def test_efficiency_is_docq_over_the_ceiling_with_the_work_each_computed() -> None:
    docq = {"docs_per_s": 4.0, "computed_tokens": 1_010}
    alone = {"docs_per_s": 5.0, "computed_tokens": 1_000}
    assert report.efficiency(docq, alone) == {"pipeline_efficiency": 0.8, "work_ratio": 1.01}


def test_cpu_use_compares_documents_per_cpu_second() -> None:
    baseline = {"cpu_s": {"gunicorn": 50.0}, "elapsed_s": 25.0}  # 2 cores busy
    docq = {"cpu_s": {"triton": 40.0, "api": 10.0}, "elapsed_s": 50.0}  # 1 core busy
    use = report.cpu_use(100, baseline, docq)
    assert use == {
        "baseline_cores_busy": 2.0,
        "docq_cores_busy": 1.0,
        "baseline_docs_per_cpu_s": 2.0,
        "docq_docs_per_cpu_s": 2.0,
        "cpu_ratio": 1.0,
    }
    # docq at half the wall rate on half the CPU: the wall ratio is the machine's, not docq's
    assert not report.comparable(use)
    assert report.comparable(use | {"baseline_cores_busy": 1.1})


def test_a_saved_run_prints_its_table_with_cpu_figures(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A run of 2026-12-01 whose baseline had half the machine: its 1.63 is flagged."""
    pipeline.main(
        ["--table", str(REPO / "bench" / "runs" / "pipeline-fused-unfair-cpu-2026-12-01.json")]
    )
    out = capsys.readouterr().out
    assert "cpu_ratio" in out and "0.86" in out
    assert "unfair" in out


def test_listener_finds_the_process_on_a_port() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        assert listener(s.getsockname()[1]) == os.getpid()
    with pytest.raises(LookupError):
        listener(1)  # nothing listens on tcpmux here


@pytest.fixture()
def baseline_url(
    tiny_checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    monkeypatch.setenv("BASELINE_CHECKPOINT", str(tiny_checkpoint))
    config = sweep.BaselineConfig(workers=2, threads=1, clients=4)
    with sweep.baseline_server(config, tmp_path) as (url, _):
        yield url


@pytest.mark.e2e
def test_tuned_baseline_workers_run_the_threads_they_were_given(baseline_url: str) -> None:
    pids = set()
    for _ in range(20):  # both Gunicorn workers answer, each with one torch thread
        got = httpx.get(f"{baseline_url}/threads").json()
        assert got["torch_threads"] == 1
        pids.add(got["pid"])
    answer = httpx.post(
        f"{baseline_url}/classify", json={"id": "d", "text": generate(1, 3)[0].text}
    ).json()
    assert answer["id"] == "d" and answer["windows"] >= 1


@pytest.mark.e2e
def test_the_baseline_classifies_every_document(baseline_url: str) -> None:
    import asyncio

    docs = generate(12, 11)
    result = asyncio.run(sweep.drive(baseline_url, docs, 4, 60.0))
    assert result["documents_done"] == 12 and result["timeouts"] == result["errors"] == 0


def test_the_ceiling_reads_the_limits_the_workers_read() -> None:
    repository = REPO / "model_repository"
    spec = pbtxt.served_spec(pbtxt.read(repository / "doc-type" / "config.pbtxt"), repository)
    assert (spec.max_batch_size, spec.max_seq_len, spec.stride) == (8, 512, 64)
    assert spec.budget == 8 * 512 and spec.tokenizer_dir == SPEC.tokenizer_dir
