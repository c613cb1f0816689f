"""The skip of the tests that need a CUDA GPU, saying where and when they last ran.

CI has no GPU, so these tests skip there; the reason tells a reader what it means that they
did not run. How to run them on a GPU host: README, "Tests" (devstack/carry/pack.py carries
the tree; `python3 -m pytest --noconftest -p no:cacheprovider -o addopts= -p tests.tiers
tests/serving/test_torch_gpu_flat.py tests/serving/test_torch_gpu_runtime.py
tests/serving/test_torch_gpu_triton.py`).
"""

from __future__ import annotations

import pytest
import torch

LAST_RAN = (
    "last ran on an NVIDIA H100 on 2026-12-05 (test_torch_gpu_flat.py, 40 passed: "
    "bench/runs/gpu-tests-head-h100-2026-12-05.log) and an H200 on 2026-12-04 (all three "
    "files, 52 passed: bench/runs/gpu-tests-overlap-h200-2026-12-04.log), before "
    "serving/runtimes/ became one package; to run them: README, Tests"
)
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason=f"needs a CUDA GPU; {LAST_RAN}")
