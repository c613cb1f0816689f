#!/usr/bin/env bash
# Issue 40's device plan: one short call, then three of at most 9 minutes, each writing its
# JSON under $OUT. The gate's two models weigh 67 MB even pruned and shared (devstack/carry/parts.py)
# and a call carries 64 MiB with the working tree, so they travel in two parts: the first
# alone with the GPU tests (which need nothing from .devpack), the second with the gate.
#
# Here, once, in the checkout the device tool sends (after `make install model`), last thing
# before the calls (TREE.txt names the commit they run; commit first):
#     .venv/bin/python -m bench.gpu.parity pack        # .parity/part-1 (49 MiB), part-2
#     .venv/bin/python -m devstack.carry.pack               # .devpack: tritonserver, packages, redis
#     .venv/bin/python -m devstack.carry.pack --tree-note   # .devpack/TREE.txt
# Then, through the device tool, calls 1 and 2 back to back (part 1 waits in the machine's
# /tmp: if the machine went back in between, call 2 says so and gates nothing):
#     run(command="bash bench/gpu/device-plan.sh 1", carry=[".parity/part-1"],
#         kind="nvidia-h100-x1", timeout_s=200)
#     run(command="bash bench/gpu/device-plan.sh 2", carry=[".devpack/tritonserver.tar.xz",
#         ".devpack/site.tar.xz", ".devpack/TREE.txt", ".parity/part-2"], timeout_s=540)
#     run(command="bash bench/gpu/device-plan.sh 3", carry=[".devpack/tritonserver.tar.xz",
#         ".devpack/site.tar.xz", ".devpack/TREE.txt"], timeout_s=540)
#     run(command="bash bench/gpu/device-plan.sh 4", carry=[".devpack"], timeout_s=560)
# 1: part 1 stashed; the GPU tests (tests/serving/test_torch_gpu_flat.py), about 1 minute.
# 2: the gate on both demo models, 10,000 documents each, every batch size the runtime
#    serves by its own path (128, 64, 128 x 4 in flight, 8, 1, 2, 4, 7, 3, 5, 6), both
#    models at once; no size starts after 330 s (gate.json lists those not reached and is
#    written after each size, so a call cut at its limit keeps what it gated).
# 3: the serve bench: the converter's defaults (`default`) beside transformers served
#    (`hf:engine=hf`) and in-process HF FP16 eager, (1, 512) one at a time, (2, 512), (7, 512).
# 4: the pipeline with the defaults, 20,000 documents, against the old architecture in FP16
#    (1, 2, 4, 8, 12 workers) and FP32 (1, 2, 4, 8) on 600 documents spread over the corpus.
# Afterwards, here: .venv/bin/python -m bench.gpu.parity mark gate.json serve.json pipeline.json
# Rehearsed on the CPU with `bash bench/gpu/device-plan.sh N --tiny` (tiny models, few
# documents, the wheel's CPU tritonserver; the gate after `parity pack --n 40`).
set -o pipefail
call="$1"
tiny="$2"
D="$PWD"
OUT="${OUT:-/tmp/docq-plan-out}"
mkdir -p "$OUT"
PY=python3
if [ -n "$tiny" ]; then
    PY="$D/.venv/bin/python"
elif [ "$call" != 1 ]; then
    cp .devpack/TREE.txt TREE.txt 2>/dev/null  # which commit ran (bench.gpu.report.tree_note)
    source devstack/carry/remote.sh >/dev/null || exit 1
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
fi
head -n 1 TREE.txt 2>/dev/null || git rev-parse HEAD 2>/dev/null
if [ -d .parity/part-$call ]; then
    $PY -m bench.gpu.parity stash .parity/part-$call || exit 1
fi
case "$call" in
1)
    [ -n "$tiny" ] && exit 0
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
    timeout 150 $PY -m pytest --noconftest -p no:cacheprovider -o addopts= -p tests.tiers \
        tests/serving/test_torch_gpu_flat.py -q -rfs 2>&1 | tee "$OUT/gpu-tests.log"
    ;;
2)
    if [ -z "$tiny" ]; then
        gate=(--budget-s 330)
    else
        gate=(--reference torch:fp32 --n 40 --threads 2 --batch-sizes 128,64,128x4,8,1 --budget-s 300)
    fi
    rm -rf /tmp/docq-gate
    timeout 500 $PY -m bench.gpu.parity run --out /tmp/docq-gate "${gate[@]}" 2>&1 \
        | tee "$OUT/gate.log"
    code=$?
    cp /tmp/docq-gate/gate.json "$OUT/" 2>/dev/null
    tar -czf "$OUT/gate-reports.tgz" -C /tmp/docq-gate . 2>/dev/null
    exit $code
    ;;
3)
    if [ -z "$tiny" ]; then
        serve=(--seconds 0.8 --warm 0.3 --requests 60)
    else
        serve=(--tiny --seconds 0.3 --warm 0.1 --requests 10 --processes 2)
    fi
    timeout 500 $PY -m bench.gpu.serve --out "$OUT/serve.json" "${serve[@]}" \
        --variant default --variant hf:engine=hf 2>&1 | tee "$OUT/serve.log"
    ;;
4)
    if [ -z "$tiny" ]; then
        pipe=(--baseline-documents 600 --budget-s 480)
    else
        pipe=(--tiny --docs 200 --baseline-workers 1 --baseline-workers-fp16 1 --budget-s 400)
    fi
    timeout 520 $PY -m bench.gpu.pipeline "${pipe[@]}" \
        --out "$OUT/pipeline.json" 2>&1 | tee "$OUT/pipeline.log"
    ;;
*)
    echo "usage: bash bench/gpu/device-plan.sh 1|2|3|4 [--tiny]" >&2
    exit 2
    ;;
esac
