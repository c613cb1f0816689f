"""`docq convert` and `docq validate`: a checkpoint to a served, parity-checked model.

The commands live here, beside the code they drive, and are registered on the `docq`
app by client/cli.py. Heavy imports (torch, transformers, onnx) happen inside the commands,
so `docq submit` and friends start fast and work without the build extras.

    docq convert build/doc-type/checkpoint --name doc-type --runtime onnx-cpu \\
        --corpus doc-type --n 1000 --publish
    docq validate build/doc-type/checkpoint \\
        --candidate onnx:model_repository/doc-type/1/model.onnx \\
        --corpus doc-type --n 2000 --out bench/parity/doc-type-onnx-fp32
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from conversion.defaults import TORCH_GPU, describe

if TYPE_CHECKING:
    from conversion.parity import ParityReport, Thresholds, Windowing
    from corpus.doc_type import LabelledDocument

Corpus = Annotated[
    str | None,
    typer.Option(help="Synthetic labelled documents of a demo model: doc-type or doc-lang."),
]
Documents = Annotated[
    Path | None,
    typer.Option(help='Labelled documents: NDJSON, one {"id", "text", "label"} per line.'),
]
N = Annotated[int, typer.Option("--n", help="How many synthetic documents.")]
Seed = Annotated[int, typer.Option(help="Synthetic corpus seed (not a training seed).")]
MaxAccDiff = Annotated[
    float, typer.Option(help="Largest accepted accuracy difference, percentage points.")
]
MinAgreement = Annotated[float, typer.Option(help="Smallest accepted label agreement (0-1).")]


def _documents(
    corpus: str | None, documents: Path | None, n: int, seed: int
) -> tuple[list[LabelledDocument], str]:
    from conversion import parity

    if documents is not None:
        return parity.read_documents(documents), str(documents)
    if corpus is None:
        raise typer.BadParameter("give --documents FILE or --corpus doc-type|doc-lang")
    return parity.synthetic(corpus, n, seed), f"synthetic {corpus} corpus, seed {seed}"


@contextmanager
def _refusals(command: str) -> Iterator[None]:
    """A checkpoint docq cannot convert: one line on stderr and exit 2, no traceback."""
    from conversion.checkpoint import CheckpointRefused

    try:
        yield
    except CheckpointRefused as exc:
        typer.echo(f"docq {command}: refused: {exc}", err=True)
        raise typer.Exit(2) from None


def _echo_report(report: ParityReport, paths: tuple[Path, Path] | None) -> None:
    verdict = "PASS" if report.passed else "FAIL"
    typer.echo(
        f"{verdict} {report.candidate}: agreement {report.agreement:.4%}, accuracy "
        f"{report.reference_accuracy:.4%} -> {report.candidate_accuracy:.4%} "
        f"({report.accuracy_diff_pt:+.3f} pt), max |logit diff| "
        f"{report.max_abs_logit_diff:.2e}, mean {report.mean_abs_logit_diff:.2e} "
        f"on {report.documents} documents ({report.windows} windows)"
    )
    for failure in report.failures:
        typer.echo(f"  - {failure}")
    if paths:
        typer.echo(f"  report: {paths[0]} and {paths[1]}")


def _run_parity(
    checkpoint: Path,
    candidates: list[str],
    reference: str,
    docs: list[LabelledDocument],
    source: str,
    windowing: Windowing,
    thresholds: Thresholds,
    threads: int,
) -> list[ParityReport]:
    """One report per candidate; the reference's logits are computed once for all."""
    import torch

    from conversion import parity
    from conversion.checkpoint import load_checkpoint
    from docq.text.tokenizing import load_tokenizer

    torch.set_num_threads(threads)
    model, labels = load_checkpoint(checkpoint)
    tokenizer = load_tokenizer(checkpoint)
    ref_runner = parity.candidate(reference, model, threads)
    cached = parity.cached(ref_runner)
    reports = []
    for spec in candidates:
        reports.append(
            parity.compare(
                cached,
                parity.candidate(spec, model, threads),
                docs,
                labels,
                tokenizer,
                names=(f"{reference} ({checkpoint.name})", spec),
                windowing=windowing,
                thresholds=thresholds,
                source=source,
            )
        )
    return reports


def validate(
    checkpoint: Annotated[
        Path, typer.Argument(help="The reference: a Hugging Face checkpoint directory.")
    ],
    candidate: Annotated[
        list[str],
        typer.Option(
            help="What to check (repeatable): onnx:PATH, openvino:[fp32|bf16:]PATH, "
            "torch:fp16|bf16|fp32[:cuda], triton:HOST:PORT/MODEL or tensorrt:PATH."
        ),
    ],
    reference: Annotated[
        str, typer.Option(help="How the reference runs: torch:fp32 (CPU) or torch:fp32:cuda.")
    ] = "torch:fp32",
    corpus: Corpus = None,
    documents: Documents = None,
    n: N = 1000,
    seed: Seed = 4004,
    max_seq_len: Annotated[int, typer.Option(help="Window length, as served.")] = 512,
    stride: Annotated[int, typer.Option(help="Window overlap, as served.")] = 64,
    aggregation: Annotated[str, typer.Option(help="mean or weighted, as served.")] = "mean",
    batch_size: Annotated[int, typer.Option(help="Windows per model call.")] = 8,
    threads: Annotated[int, typer.Option(help="CPU threads of CPU runners.")] = 2,
    max_accuracy_diff_pt: MaxAccDiff = 0.05,
    min_agreement: MinAgreement = 0.995,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Report prefix: writes PREFIX.json and PREFIX.md (a suffix per "
            "candidate when several are given)."
        ),
    ] = None,
) -> None:
    """Check candidates against the PyTorch FP32 reference on labelled documents."""
    from conversion.parity import Thresholds, Windowing

    docs, source = _documents(corpus, documents, n, seed)
    windowing = Windowing(max_seq_len, stride, aggregation, batch_size)
    thresholds = Thresholds(max_accuracy_diff_pt, min_agreement)
    with _refusals("validate"):
        reports = _run_parity(
            checkpoint, candidate, reference, docs, source, windowing, thresholds, threads
        )
    for i, report in enumerate(reports):
        paths = None
        if out is not None:
            prefix = out if len(reports) == 1 else out.with_name(f"{out.name}-{i + 1}")
            paths = report.write(prefix)
        _echo_report(report, paths)
    if not all(r.passed for r in reports):
        raise typer.Exit(1)


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
    with _refusals("convert"):
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
        docs, source = _documents(corpus, documents, n, seed)
        windowing = Windowing(max_seq_len, stride, aggregation, staged.config.max_batch_size)
        thresholds = Thresholds(max_accuracy_diff_pt, min_agreement)
        (report,) = _run_parity(
            checkpoint, [gate], "torch:fp32", docs, source, windowing, thresholds, threads
        )
        _echo_report(report, report.write(workdir / name / "parity"))
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


def app() -> typer.Typer:
    """An app holding only these two commands (`python -m conversion.cli`, e.g. on a GPU host)."""
    standalone = typer.Typer(no_args_is_help=True)
    standalone.command()(convert)
    standalone.command()(validate)
    return standalone


if __name__ == "__main__":
    app()()
