"""`docq convert`: a checkpoint built for a runtime, gated on parity, published as a new
version (and loaded by Triton, if asked).

    docq convert build/doc-type/checkpoint --name doc-type --runtime onnx-cpu \\
        --corpus doc-type --n 1000 --publish

Its options' defaults, and the help's table of each runtime's, are conversion/defaults.py's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from conversion.cli_gate import (
    Corpus,
    Documents,
    MaxAccDiff,
    MinAgreement,
    N,
    Seed,
    echo_report,
    labelled_documents,
    refusals,
    run_parity,
)
from conversion.defaults import TORCH_GPU, describe


def convert(
    checkpoint: Annotated[
        Path, typer.Argument(help="A Hugging Face sequence-classification checkpoint directory.")
    ],
    name: Annotated[str, typer.Option(help="The model's name in the Triton repository.")],
    runtime: Annotated[
        str, typer.Option(help="onnx-cpu, openvino-cpu, onnxruntime, torch-gpu or tensorrt.")
    ] = "onnx-cpu",
    precision: Annotated[
        str | None,
        typer.Option(
            help="onnx: fp32|int8; openvino-cpu: fp32|bf16; torch-gpu: fp16|bf16|fp32|fp8 "
            "(fp8: the flat engine, behind the gate); tensorrt: fp16|fp32."
        ),
    ] = None,
    repository: Annotated[
        Path | None, typer.Option(help="Triton model repository (default: DOCQ_MODEL_REPOSITORY).")
    ] = None,
    max_batch_size: Annotated[
        int | None,
        typer.Option(
            help="Windows per model execution (default: the runtime's, listed above; "
            "torch-gpu 128 for throughput, 8 where small jobs' latency comes first)."
        ),
    ] = None,
    max_seq_len: Annotated[int, typer.Option(help="Tokens per window.")] = 512,
    max_tokens: Annotated[
        int | None,
        typer.Option(
            help="torch-gpu flat: most real tokens per request, the workers' token budget "
            "(default: max-batch-size x max-seq-len, one request can fill an execution)."
        ),
    ] = None,
    stride: Annotated[int, typer.Option(help="Tokens two windows overlap by.")] = 64,
    aggregation: Annotated[str, typer.Option(help="mean or weighted.")] = "mean",
    opt_batch: Annotated[int, typer.Option(help="TensorRT: batch the engine is tuned for.")] = 2,
    instances: Annotated[
        int | None, typer.Option(help="Model instances Triton runs (default: the runtime's).")
    ] = None,
    threads: Annotated[int, typer.Option(help="CPU threads per instance / for the gate.")] = 2,
    graph_seq_step: Annotated[
        int,
        typer.Option(help="torch-gpu: CUDA graphs per length bucket of N tokens; 0: eager."),
    ] = 64,
    engine: Annotated[
        str,
        typer.Option(
            help="torch-gpu: flat (real tokens only, varlen attention, fused norms; BERT, "
            "RoBERTa, XLM-R) or hf (transformers on padded batches)."
        ),
    ] = "flat",
    gelu: Annotated[
        str,
        typer.Option(
            help="torch-gpu flat: the FFN's GELU, tanh (in the GEMM epilogue, faster) or erf "
            "(exact): where the parity gate refuses tanh, convert with erf."
        ),
    ] = TORCH_GPU.gelu,
    attention: Annotated[
        str,
        typer.Option(
            help="torch-gpu flat: the attention kernel, cudnn (cuDNN's fused kernel for the "
            "full windows of large, eager batches, flash for the rest; checked against flash "
            "at load, flash where it fails) or flash (FA2 everywhere)."
        ),
    ] = TORCH_GPU.attention,
    small_attention: Annotated[
        str,
        typer.Option(
            help="torch-gpu flat: the attention kernel of small batches' CUDA graphs, flash "
            "(FA2) or triton (docq's kernel, 64-row query blocks; checked against flash at "
            "load, flash where it fails)."
        ),
    ] = TORCH_GPU.small_attention,
    gemm: Annotated[
        str,
        typer.Option(
            help="torch-gpu flat: the large batches' matrix products, cublas or triton "
            "(docq's persistent GEMM, timed against cuBLAS at load per product, kept where "
            "faster)."
        ),
    ] = TORCH_GPU.gemm,
    overlap: Annotated[
        bool,
        typer.Option(
            help="torch-gpu: a large batch's execute() returns once its kernels are queued "
            "and a thread answers, so the next batch's host work overlaps them."
        ),
    ] = TORCH_GPU.overlap,
    fp8_products: Annotated[
        str,
        typer.Option(
            help="torch-gpu flat fp8: the products in FP8 (all, or qkv+out+up+down parts); "
            "the rest FP16. The parity gate decides."
        ),
    ] = "all",
    fuse: Annotated[
        bool,
        typer.Option(
            help="onnx-cpu/onnxruntime: fuse attention, skip-layer-norm and GELU with ONNX "
            "Runtime's transformer optimizer."
        ),
    ] = False,
    publish: Annotated[
        bool, typer.Option(help="Publish as the next version if the parity gate passes.")
    ] = False,
    force: Annotated[bool, typer.Option(help="Publish even if the gate fails or cannot run.")] = (
        False
    ),
    version: Annotated[int | None, typer.Option(help="Version number (default: next).")] = None,
    load: Annotated[
        bool,
        typer.Option(
            help="Then ask Triton (DOCQ_TRITON_GRPC_URL) to load it: the new version "
            "is served, requests in flight finish on the old one."
        ),
    ] = False,
    corpus: Corpus = None,
    documents: Documents = None,
    n: N = 1000,
    seed: Seed = 4004,
    max_accuracy_diff_pt: MaxAccDiff = 0.05,
    min_agreement: MinAgreement = 0.995,
    workdir: Annotated[Path, typer.Option(help="Where the build is staged.")] = Path(
        "build/convert"
    ),
) -> None:
    from conversion import convert as conv
    from conversion.parity import Thresholds, Windowing
    from docq.config import get_settings

    target = conv.Target(
        name=name,
        runtime=runtime,
        precision=precision,
        max_batch_size=max_batch_size or 0,  # 0: the runtime's default
        max_seq_len=max_seq_len,
        max_tokens=max_tokens,
        stride=stride,
        aggregation=aggregation,
        opt_batch=opt_batch,
        instance_count=instances,
        threads=threads,
        graph_seq_step=graph_seq_step,
        engine=engine,
        gelu=gelu,
        attention=attention,
        small_attention=small_attention,
        gemm=gemm,
        overlap=overlap,
        fp8_products=fp8_products,
        fuse=fuse,
    )
    with refusals("convert"):
        staged = conv.stage(checkpoint, target, workdir / name)
    for note in staged.notes:
        typer.echo(note)
    typer.echo(f"staged {staged.folder} ({target.runtime}, {target.dtype})")
    if not publish:
        return
    gate = staged.gate_candidate()
    if gate is None:
        typer.echo(
            f"the {runtime} runtime cannot run here: no parity gate (run docq validate "
            "where it runs)"
        )
        if not force:
            typer.echo("refusing to publish an unchecked candidate; --force publishes it")
            raise typer.Exit(1)
    else:
        docs, source = labelled_documents(corpus, documents, n, seed)
        windowing = Windowing(max_seq_len, stride, aggregation, staged.config.max_batch_size)
        thresholds = Thresholds(max_accuracy_diff_pt, min_agreement)
        (report,) = run_parity(
            checkpoint, [gate], "torch:fp32", docs, source, windowing, thresholds, threads
        )
        echo_report(report, report.write(workdir / name / "parity"))
        if not report.passed and not force:
            typer.echo(
                "refusing to publish: the candidate is outside the parity thresholds "
                "(--force publishes it anyway)"
            )
            raise typer.Exit(1)
    settings = get_settings()
    published = conv.publish(staged, repository or settings.model_repository, version)
    typer.echo(f"published {published}")
    if load:
        import tritonclient.grpc as grpcclient
        from tritonclient.utils import InferenceServerException

        from docq.model_control import Policy

        client = grpcclient.InferenceServerClient(settings.triton_grpc_url)
        try:
            client.load_model(name, headers=Policy.from_settings(settings).headers)
        except InferenceServerException as exc:
            typer.echo(f"published, but Triton did not load it: {exc.message()}")
            raise typer.Exit(1) from None
        finally:
            client.close()
        typer.echo(f"Triton at {settings.triton_grpc_url} serves {name} version {published.name}")


convert.__doc__ = (
    "Convert a checkpoint for a runtime, gate it on parity, publish it as a new version.\n\n"
    "Defaults per runtime, the configuration its benchmarks found best "
    "(conversion/defaults.py):\n\n" + describe()
)
