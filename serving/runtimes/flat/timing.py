"""How the choices made at load (flat.attention's cuDNN check, flat.gemm_plan) time a call."""

from __future__ import annotations

import time
from typing import Any

import torch


def seconds_per_call(fn: Any, device: str, calls: int = 5) -> float:
    """Wall seconds per call of `fn()` after one warm-up, host work included."""
    fn()
    sync = torch.cuda.synchronize if device != "cpu" else (lambda *_: None)
    sync(device)
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync(device)
    return (time.perf_counter() - start) / calls
