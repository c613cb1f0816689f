"""bench/gpu/profile.py's kernel families: what the per-kernel tables in NOTES.md add up."""

from __future__ import annotations

import pytest

from bench.gpu.profile import family

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
