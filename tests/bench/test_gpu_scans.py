"""bench/gpu/scans.py: the per-page figures and the cores-needed arithmetic from a recorded
sample, and the scans as they are uploaded."""

from __future__ import annotations

from pathlib import Path

from bench.gpu import report, scans

# A scans job's results as the API pages them (four scans: three read, one refused) and the
# CpuMeter trees of its window, the shape bench.gpu.scans.run_scans reads.
RESULTS = [
    {"id": "r0-a.tiff", "label": "invoice", "pages": 1, "windows": 1, "extraction": "ocr"},
    {"id": "r0-b.tiff", "label": "contract", "pages": 3, "windows": 5, "extraction": "ocr"},
    {"id": "r0-c.tiff", "label": "receipt", "pages": 1, "windows": 1, "extraction": "ocr"},
    {"id": "r0-d.tiff", "error": "no", "error_code": "ocr_unavailable"},
]
CPU_S = {"api": 0.4, "bulk worker 0": 0.5, "extract worker 0": 6.0, "extract worker 1": 4.0}


def test_per_page_figures_from_a_recorded_job() -> None:
    got = scans.read_figures(RESULTS, 4.0, CPU_S)
    assert (got["documents"], got["classified"], got["failures"]) == (4, 3, 1)
    assert got["errors"] == {"ocr_unavailable": 1} and got["read_as"] == {"ocr": 3}
    assert (got["pages"], got["windows"], got["windows_per_page"]) == (5, 7, 1.4)
    assert got["extract_cpu_s_per_page"] == 2.0  # 10 CPU seconds of extract workers, 5 pages
    assert got["pages_per_core_s"] == 0.5 and got["extract_cores_busy"] == 2.5
    assert got["bulk_cpu_ms_per_page"] == 100.0 and got["docs_per_s"] == 1.0
    assert got["cpu_s"]["tiers"]["extract workers"] == 10.0


def test_cores_needed_from_the_same_runs_gpu_capacity() -> None:
    figures = scans.read_figures(RESULTS, 4.0, CPU_S)
    ceiling = {"windows": 14_000, "elapsed_s": 10.0}  # Triton alone: 1,400 windows/s
    got = scans.add_cores_needed(dict(figures), {"ceiling": ceiling, "docq": {}})
    # 1,400 windows/s / 1.4 windows a page = 1,000 pages/s, each 2 core-seconds of reading
    assert got["gpu_pages_per_s"] == 1000.0 and got["cores_needed"] == 2000.0
    assert got["gpu_capacity_from"] == "ceiling (Triton alone)"
    assert scans.cores_needed(700, 1.0, 0.5) == 350
    # and from the GPU time Triton spent on these pages: 0.5 s for 5 pages, 2 s of reading each
    timed = scans.add_cores_needed(figures | {"triton": {"compute_s": 0.5}}, {"ceiling": ceiling})
    assert timed["gpu_compute_ms_per_page"] == 100.0 and timed["cores_needed_by_gpu_time"] == 20.0
    assert "cores_needed_by_gpu_time" not in got  # no counters, no figure
    # without a ceiling, the text phase's windows/s; without either, no figure at all
    text = scans.add_cores_needed(dict(figures), {"docq": {"windows_per_s": 700.0}})
    assert text["cores_needed"] == 1000.0 and text["gpu_capacity_from"] == "docq text phase"
    assert "cores_needed" not in scans.add_cores_needed(dict(figures), {})
    # nothing read (every scan refused): no per-page figure to divide by
    refused = scans.read_figures(RESULTS[3:], 1.0, CPU_S)
    assert "extract_cpu_s_per_page" not in refused
    assert "cores_needed" not in scans.add_cores_needed(refused, {"ceiling": ceiling})


def test_the_summary_carries_the_scans_headline() -> None:
    r = {"scans": scans.add_cores_needed(scans.read_figures(RESULTS, 4.0, CPU_S),
                                         {"docq": {"windows_per_s": 700.0}})}  # fmt: skip
    s = report.summarise(r)
    assert s["extraction_cores_needed"] == 1000.0 and s["scans_pages_per_core_s"] == 0.5


def test_load_scans_repeats_each_file_under_a_name_of_its_own(tmp_path: Path) -> None:
    for name in ("a.tiff", "b.tiff", "c.tiff"):
        (tmp_path / name).write_bytes(name.encode())
    (tmp_path / "labels.json").write_text('{"b.tiff": "x", "a.tiff": "y", "c.tiff": "z"}')
    got = scans.load_scans(tmp_path, docs=2, repeat=2)
    assert [(n, d) for n, d, _ in got] == [
        ("r0-b.tiff", b"b.tiff"), ("r0-a.tiff", b"a.tiff"),
        ("r1-b.tiff", b"b.tiff"), ("r1-a.tiff", b"a.tiff"),
    ]  # fmt: skip
