"""bench/sizing/scans.py: the per-page figures from a recorded scans job and the CPU
seconds of its process trees, docq's own apart from Triton's."""

from __future__ import annotations

from bench.sizing import scans

# A scans job's results as the API pages them (four scans: three read, one refused) and the
# CpuMeter trees of its window, as bench.stack.Stack.meter names them.
RESULTS = [
    {"id": "a.tiff", "label": "invoice", "pages": 1, "windows": 1, "extraction": "ocr"},
    {"id": "b.tiff", "label": "contract", "pages": 3, "windows": 5, "extraction": "ocr"},
    {"id": "c.tiff", "label": "receipt", "pages": 1, "windows": 1, "extraction": "ocr"},
    {"id": "d.tiff", "error": "no", "error_code": "ocr_unavailable"},
]
CPU_S = {
    "api": 0.4, "triton": 3.0, "bulk worker 0": 0.5, "priority worker": 0.1,
    "extract worker 0": 6.0, "extract worker 1": 4.0,
}  # fmt: skip


def test_per_page_figures_count_docqs_processes_and_show_triton_apart() -> None:
    got = scans.figures(RESULTS, 4.0, CPU_S)
    assert (got["documents"], got["classified"], got["failures"]) == (4, 3, 1)
    assert got["errors"] == {"ocr_unavailable": 1} and got["read_as"] == {"ocr": 3}
    assert (got["pages"], got["windows"], got["windows_per_page"]) == (5, 7, 1.4)
    assert got["cpu_s_by_tier"]["extract worker"] == 10.0  # both workers' trees
    assert got["extract_cpu_s_per_page"] == 2.0  # 10 CPU seconds of extract workers, 5 pages
    assert got["bulk_cpu_s_per_page"] == 0.1 and got["api_cpu_s_per_page"] == 0.08
    # docq's own: API 0.4 + extract 10 + bulk 0.5 + small-job 0.1 = 11 s; Triton's 3 s apart
    assert got["docq_cpu_s_per_page"] == 2.2 and got["triton_cpu_s_per_page"] == 0.6
    # one H200's windows/s over 1.4 windows a page, each page 2.2 CPU seconds of docq's
    assert got["h200_pages_per_s"] == round(scans.H200_WINDOWS_PER_S / 1.4, 1)
    assert got["cores_per_h200"] == round(got["h200_pages_per_s"] * 2.2)


def test_nothing_read_gives_no_per_page_figure() -> None:
    refused = scans.figures(RESULTS[3:], 1.0, CPU_S)
    assert refused["pages"] == 0 and refused["failures"] == 1
    assert "docq_cpu_s_per_page" not in refused and "cores_per_h200" not in refused
