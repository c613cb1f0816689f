"""The ceiling the bench holds docq to: Triton alone on the corpus's windows, packed by
docq's own packer with the model's limits, with nothing in front of it."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from bench.corpus import padding_report, windows_of
from bench.procs import CpuMeter
from bench.stack import Stack
from corpus.doc_type import LabelledDocument
from docq.catalog import ModelCatalog
from docq.models import ModelSpec
from docq.text.packing import Batch, pack
from docq.text.windowing import Window
from workers.inference import TritonInference


def ceiling_batches(windows: Sequence[Window], model: ModelSpec) -> list[Batch]:
    """The corpus's windows packed as docq's batcher packs them (the model's batch size and
    token budget), sorted over the whole corpus at once: the least padding this packer can
    give, so the ceiling never computes more than docq's workers."""
    return pack(windows, model.max_batch_size, model.budget, ragged=model.ragged)


def run_triton_alone(stack: Stack, docs: Sequence[LabelledDocument], model: str) -> dict[str, Any]:
    """The corpus's windows as ceiling_batches() packs them, straight to Triton with twice
    the requests outstanding that docq's bulk workers keep, timed from the first request to
    the last answer; tokenizing happens before the clock starts."""
    catalog = ModelCatalog(stack.triton_url, stack.repo)
    spec = catalog.spec(model)
    catalog.close()
    windows = windows_of(docs, spec)
    batches = ceiling_batches(windows, spec)
    in_flight = 2 * stack.bulk_workers * stack.settings.triton_max_in_flight
    triton = TritonInference(stack.triton_url, max_in_flight=in_flight, timeout_s=300)
    meter = CpuMeter({"triton": stack.triton_pid})
    meter.start()
    t0 = time.perf_counter()
    triton.infer(spec, batches)
    elapsed = time.perf_counter() - t0
    triton.close()
    return {
        "documents": len(docs),
        "windows": len(windows),
        "batches": len(batches),
        "computed_tokens": sum(b.computed_tokens for b in batches),
        "real_tokens": sum(b.real_tokens for b in batches),
        "in_flight": in_flight,
        "elapsed_s": round(elapsed, 1),
        "docs_per_s": round(len(docs) / elapsed, 3),
        "cpu_s": meter.stop(),
        "padding": padding_report(windows, batches),
    }
