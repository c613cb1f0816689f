#!/usr/bin/env bash
# Issue 40's device plan: three calls of at most 9 minutes, each writing its JSON under $OUT.
#
# Here, once, in the checkout the device tool sends (after `make install model`):
#     .venv/bin/python -m bench.gpu.parity pack   # .parity/part-1..3: the gate's two models
#     .venv/bin/python -m bench.gpu.pack          # .devpack: tritonserver, packages, redis
#     .venv/bin/python -m bench.gpu.pack --tree   # .devpack/tree.tar.xz: this commit, TREE.txt
# Then, back to back (the parts wait in the machine's /tmp: the gate needs all three on
# one machine, so call 3 must follow while it is warm), through the device tool:
#     run(command="bash bench/gpu/device-plan.sh 1", carry=[".devpack", ".parity/part-1"],
#         kind="nvidia-h100-x1", timeout_s=560)
#     run(command="bash bench/gpu/device-plan.sh 2", carry=[".devpack", ".parity/part-2"],
#         timeout_s=560)
#     run(command="bash bench/gpu/device-plan.sh 3", carry=[".devpack", ".parity/part-3"],
#         timeout_s=560)
# Call 1: the GPU tests, then the serve bench: the converter's defaults (`default`) beside
#   transformers served (`hf:engine=hf`), and in-process HF FP16 eager and torch.compile
#   max-autotune with CUDA graphs (their compile bounded), (1, 512) one at a time, (2, 512),
#   (7, 512). Call 2: the pipeline with the defaults, 20,000 documents, against the old
#   architecture in FP16 (1, 2, 4, 8, 12 workers) and FP32 (1, 2, 4, 8) on 600 documents
#   spread over the corpus. Call 3: the gate on both demo models, 10,000 documents each,
#   every batch size the runtime serves by its own path (1-8 graphs, 64, 128, 128 x 4 in
#   flight), until its 420 s budget: a size not reached is listed in gate.json.
# Afterwards, here: .venv/bin/python -m bench.gpu.parity mark gate.json serve.json pipeline.json
# Rehearsed on the CPU with `bash bench/gpu/device-plan.sh N --tiny` (tiny models, few
# documents, the wheel's CPU tritonserver; no .devpack needed).
set -o pipefail
call="$1"
tiny="$2"
D="$PWD"
OUT="${OUT:-/tmp/docq-plan-out}"
mkdir -p "$OUT"
if [ -z "$tiny" ]; then
    mkdir -p /tmp/docq && tar -xJf .devpack/tree.tar.xz -C /tmp/docq && cd /tmp/docq || exit 1
    DEVPACK_DIR="$D/.devpack" source bench/gpu/remote.sh >/dev/null || exit 1
    PY=python3
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
else
    PY="$D/.venv/bin/python"
fi
head -n 1 TREE.txt 2>/dev/null || git rev-parse HEAD
if [ -d "$D/.parity/part-$call" ]; then
    $PY -m bench.gpu.parity stash "$D/.parity/part-$call" || exit 1
fi
case "$call" in
1)
    if [ -z "$tiny" ]; then
        timeout 120 $PY -m pytest --noconftest -p no:cacheprovider -o addopts= -p tests.tiers \
            tests/serving/test_torch_gpu_flat.py -q -rfs 2>&1 | tee "$OUT/gpu-tests.log"
        serve=(--seconds 0.8 --warm 0.3 --requests 60 --references-timeout 180)
    else
        serve=(--tiny --seconds 0.3 --warm 0.1 --requests 10 --processes 2 --references-timeout 120)
    fi
    timeout 380 $PY -m bench.gpu.serve --out "$OUT/serve.json" "${serve[@]}" \
        --variant default --variant hf:engine=hf 2>&1 | tee "$OUT/serve.log"
    ;;
2)
    if [ -z "$tiny" ]; then
        pipe=(--baseline-documents 600 --budget-s 480)
    else
        pipe=(--tiny --docs 200 --baseline-workers 1 --baseline-workers-fp16 1 --budget-s 400)
    fi
    timeout 520 $PY -m bench.gpu.pipeline --skip scaling --skip ceiling "${pipe[@]}" \
        --out "$OUT/pipeline.json" 2>&1 | tee "$OUT/pipeline.log"
    ;;
3)
    if [ -z "$tiny" ]; then
        gate=(--budget-s 420)
    else
        gate=(--reference torch:fp32 --n 40 --threads 2 --batch-sizes 128,64,128x4,8,1 --budget-s 300)
    fi
    rm -rf /tmp/docq-gate
    timeout 520 $PY -m bench.gpu.parity run --out /tmp/docq-gate "${gate[@]}" 2>&1 \
        | tee "$OUT/gate.log"
    code=$?
    cp /tmp/docq-gate/gate.json "$OUT/" 2>/dev/null
    tar -czf "$OUT/gate-reports.tgz" -C /tmp/docq-gate . 2>/dev/null
    exit $code
    ;;
*)
    echo "usage: bash bench/gpu/device-plan.sh 1|2|3 [--tiny]" >&2
    exit 2
    ;;
esac
