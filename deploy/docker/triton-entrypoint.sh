#!/usr/bin/env bash
# Start tritonserver for docq in the NGC container from the same DOCQ_* settings as the rest
# of the stack; serving/server.py does the same for the local, CPU-only server.
#
#   DOCQ_MODEL_REPOSITORY   the mounted model repository (default /models)
#   DOCQ_MODEL_CONTROL      explicit (default), none or poll; docq's model control (loads on
#                           first use, unloads idle models) needs explicit
#   DOCQ_MODEL_STARTUP      comma-separated models loaded and warmed before the server
#   DOCQ_MODEL_PINNED       reports ready (explicit mode); both default to doc-type, as in
#                           docq/config/. One missing from the repository is reported, not
#                           fatal (the server starts without it).
#   DOCQ_TRITON_ADMIN_KEY   set: the admin APIs (RESTRICTED below, as in serving/server.py)
#                           need the header triton-admin-key with this value, over HTTP and
#                           gRPC; docq's model control sends it. Inference and health stay open.
#
# Ports are the container's own (8000 HTTP, 8001 gRPC, 8002 metrics): map them outside.
# Arguments are passed to tritonserver after these flags (a later flag wins).
set -euo pipefail

repository="${DOCQ_MODEL_REPOSITORY:-/models}"
mode="${DOCQ_MODEL_CONTROL:-explicit}"

args=(
  "--model-repository=${repository}"
  "--model-control-mode=${mode}"
  # Ready only when every loaded model is: the readiness probe keeps traffic off until then.
  "--strict-readiness=true"
  # A model that fails to load is reported and unavailable; the others are still served.
  "--exit-on-error=false"
  "--http-port=8000"
  "--grpc-port=8001"
  "--metrics-port=8002"
  "--log-verbose=0"
  # The Python backend's shared memory per stub, 64 MB at start and per growth: growing its
  # 1 MB default under load is where it crashes (serving/server.py, PYTHON_SHM).
  "--backend-config=python,shm-default-byte-size=67108864"
  "--backend-config=python,shm-growth-byte-size=67108864"
)

if [[ "${mode}" == explicit ]]; then
  # Unset means the settings default; set but empty means none (as pydantic reads it).
  IFS=',' read -r -a names <<<"${DOCQ_MODEL_STARTUP-doc-type},${DOCQ_MODEL_PINNED-doc-type}"
  declare -A seen=()
  for name in "${names[@]}"; do
    read -r name <<<"${name}" || true # trim the blanks around a name
    if [[ -z "${name}" || -n "${seen[${name}]:-}" ]]; then
      continue
    fi
    seen[${name}]=1
    if [[ -f "${repository}/${name}/config.pbtxt" ]]; then
      args+=("--load-model=${name}")
    else
      echo "docq-triton: startup model '${name}' is not in ${repository}" >&2
    fi
  done
fi

restricted="model-repository,model-config,statistics,shared-memory,trace,logging"
if [[ -n "${DOCQ_TRITON_ADMIN_KEY:-}" ]]; then
  rule="${restricted}:triton-admin-key=${DOCQ_TRITON_ADMIN_KEY}"
  args+=("--http-restricted-api=${rule}" "--grpc-restricted-protocol=${rule}")
fi

exec tritonserver "${args[@]}" "$@"
