"""bench/gpu/: the corpus the GPU bench writes, and the numbers it derives from samples."""

from __future__ import annotations

import math

import pytest

from bench import docq_jobs, documents, report
from bench.gpu import measure, pipeline
from corpus.doc_type import generate
from docq.config import REPO_ROOT

DEMO_TOKENIZER = REPO_ROOT / "model_repository" / "doc-type" / "tokenizer"


def test_the_parallel_corpus_is_the_bench_corpus() -> None:
    assert documents.generate_parallel(240, 5, processes=2) == generate(240, 5)
    assert documents.generate_parallel(20, 5, processes=1) == generate(20, 5)
    with pytest.raises(ValueError):
        documents.generate_parallel(-1, 5, processes=2)


def test_window_counts_and_the_longest_documents() -> None:
    docs = generate(40, 3)
    counts = documents.window_counts(docs, DEMO_TOKENIZER)
    assert len(counts) == 40 and min(counts) >= 1
    top = documents.longest(docs, counts, 5)
    assert len(top) == 5 and top == sorted(top)
    assert min(counts[i] for i in top) >= max(c for i, c in enumerate(counts) if i not in top)


def test_gpu_window_keeps_the_samples_inside() -> None:
    samples = [(0.0, 10.0, 100.0), (1.0, 95.0, 900.0), (2.0, 100.0, 1000.0), (3.0, 0.0, 50.0)]
    sampler = measure.GpuSampler()
    sampler.samples = samples
    got = sampler.window(0.5, 2.5)
    assert got == {
        "samples": 2,
        "util_mean": 97.5,
        "util_p50": 97.5,
        "busy_share": 1.0,
        "memory_max_mib": 1000.0,
    }
    assert sampler.window(10, 11) == {"samples": 0}


def test_small_jobs_count_only_inside_the_bulk_job() -> None:
    samples = [
        (0.5, 1.0, "succeeded"),  # before the bulk job
        (1.5, 2.0, "succeeded"),
        (2.0, 3.0, "succeeded"),
        (3.0, 3.2, "failed"),
        (9.0, 11.0, "succeeded"),  # ends after it
    ]
    got = docq_jobs.small_job_stats(samples, 1.0, 10.0)
    assert got["n"] == 2 and got["not_succeeded"] == 1
    assert got["samples_s"] == [0.5, 1.0] and got["max_s"] == 1.0
    assert math.isnan(docq_jobs.small_job_stats([], 0, 1)["p95_s"])


def test_tiers_sum_the_bulk_workers() -> None:
    cpu = {"api": 1.0, "bulk worker 0": 2.5, "bulk worker 1": 3.0, "priority worker": 0.5}
    assert measure.tiers(cpu) == {"api": 1.0, "bulk workers": 5.5, "priority worker": 0.5}


def test_targets_say_met_missed_or_not_run() -> None:
    s = {"pipeline_efficiency": 0.93, "ratio": 9.1, "docq_failures": 1, "small_job_p95_s": None}
    assert list(report.targets_met(s).values()) == [True, False, None]
    s = {"pipeline_efficiency": 0.8, "ratio": 9.1, "docq_failures": 0, "small_job_p95_s": 0.4}
    assert list(report.targets_met(s).values()) == [False, True, True]
    s = {"small_job_p95_s": float("nan")}
    assert list(report.targets_met(s).values()) == [None, None, None]


def test_the_defaults_are_the_issue_s_run_and_tiny_is_small() -> None:
    full = pipeline.parse_args(["--out", "x.json"])
    assert full.docs >= 20_000 and full.workers == 12
    assert full.baseline_workers == [1, 2, 4, 8]
    tiny = pipeline.parse_args(["--out", "x.json", "--tiny"])
    assert tiny.docs < 1000 and tiny.workers <= 2


def test_stats_delta_is_what_triton_did_in_between() -> None:
    before = {"windows": 10, "executions": 2, "requests": 4, "rows": {"8": 2}}
    after = {"windows": 138, "executions": 4, "requests": 6, "rows": {"8": 2, "64": 2}}
    d = measure.stats_delta(before, after)
    assert d["windows"] == 128 and d["executions_by_rows"] == {"64": 2}
    assert d["rows_per_execution"] == 64.0 and d["requests"] == 2


def test_the_corpus_is_the_same_for_a_seed_and_another_for_another() -> None:
    written = documents.generate_parallel
    assert written(250, 11, processes=2) == written(250, 11, 1)
    assert written(50, 11, 1) != written(50, 12, 1)
