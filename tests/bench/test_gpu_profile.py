"""bench/gpu/profile.py's kernel families: what the per-kernel tables in NOTES.md add up."""

from __future__ import annotations

import pytest

from bench.gpu.profile import family, timeline

# Names as torch.profiler gave them on the H200 (bench/gpu/flat-speed-h200-2026-12-03.json).
FA2 = (
    "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false,"
    " cutlass::half_t, Flash_kernel_traits<64, 128, 128, 4, cutlass::half_t> >, false>"
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (FA2, "attention"),  # CUTLASS types in its name, still attention
        ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16", "attention"),
        ("nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_gelubias_TNT", "gemm"),
        ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32>", "gemm"),
        ("_add_layernorm", "layernorm"),
        ("void at::native::vectorized_elementwise_kernel<8, GeluCUDAKernelImpl>", "gelu"),
    ],
)
def test_each_kernel_counts_in_its_family(name: str, expected: str) -> None:
    assert family(name) == expected


def test_the_timeline_splits_busy_gpu_time_from_the_gaps_between_kernels() -> None:
    from types import SimpleNamespace

    def kernel(start: float, end: float, device: str = "CUDA") -> SimpleNamespace:
        return SimpleNamespace(
            device_type=f"DeviceType.{device}", time_range=SimpleNamespace(start=start, end=end)
        )

    # microseconds: two overlapping kernels, a gap, one kernel, a long gap, one more; host
    # events are not the GPU's
    events = [kernel(0, 100), kernel(50, 150), kernel(300, 400), kernel(1000, 1100)]
    events.append(kernel(0, 5000, "CPU"))
    assert timeline(events, calls=2) == {
        "gpu_busy_ms_per_call": 0.175, "gpu_idle_ms_per_call": 0.375
    }  # fmt: skip
    assert timeline([kernel(0, 9, "CPU")], calls=1) == {}


def test_each_gpu_gap_is_put_down_to_the_host_op_that_launched_the_next_kernel() -> None:
    from bench.gpu.gaps import host_gaps

    def x(cat: str, name: str, ts: float, dur: float, corr: int | None = None) -> dict:
        return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur,
                "args": {} if corr is None else {"correlation": corr}}  # fmt: skip

    trace = {"traceEvents": [
        # the host: one call staging its inputs, then a layer whose kernels it launches late
        x("cpu_op", "execute", 0, 1000), x("cpu_op", "aten::copy_", 100, 20),
        x("cpu_op", "aten::linear", 300, 50), x("cpu_op", "aten::mm", 310, 30),
        x("cuda_runtime", "cudaMemcpyAsync", 105, 5, corr=1),
        x("cuda_runtime", "cudaLaunchKernel", 320, 5, corr=2),
        x("cuda_runtime", "cudaLaunchKernel", 330, 5, corr=3),
        # the GPU: the copy, idle until the late launch, the GEMM, a 3 us gap (too short to
        # count), a kernel launched long before its own gap, then the late one after the copy
        x("gpu_memcpy", "Memcpy HtoD", 110, 10, corr=1),
        x("kernel", "nvjet_gemm", 400, 100, corr=2),
        x("kernel", "_add_layernorm", 503, 10, corr=3),
        x("kernel", "flash_fwd", 600, 50, corr=1),
        {"ph": "i", "name": "marker", "ts": 0},  # not a span: ignored
    ]}  # fmt: skip
    got = host_gaps(trace, calls=1)
    assert got["idle_us_per_call_by_launching_op"] == {
        "aten::mm": 280.0,  # 120 -> 400: the GPU waited for aten::mm's launch
        "aten::copy_ (launched before the gap)": 87.0,  # 513 -> 600
    }
    assert got["gaps_per_call"] == 2.0
    assert got["largest_gaps"][0] == {
        "us": 280.0, "op": "aten::mm", "next": "nvjet_gemm",
        # inside 120 -> 400: the call, aten::linear, aten::mm and its two launches
        "host": [["execute", 280.0], ["aten::linear", 50.0], ["aten::mm", 30.0],
                 ["cudaLaunchKernel", 5.0]],
    }  # fmt: skip
    assert host_gaps({"traceEvents": []}, calls=1)["gaps_per_call"] == 0
