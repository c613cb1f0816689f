# Sourced on the device machine from the repository root: `source bench/gpu/remote.sh`.
# Unpacks what bench/gpu/pack.py put in .devpack/ into /tmp and sets the paths for it:
#   DEVPACK_TRITON     the trimmed tritonserver folder (bin/, backends/, stubs)
#   PYTHONPATH         the carried wheels, the trimmed `pytriton` (serving.server finds the
#                      server through it), then this checkout
#   LD_LIBRARY_PATH    the host's libpython 3.12 first (the Python-backend stub embeds it)
#   PATH               the python3 that holds torch first (the stub takes sys.path from it)
# Extend it beside pack.py: unpack a new file here, export what it needs.

DEVPACK_DIR="${DEVPACK_DIR:-$PWD/.devpack}"
DEVPACK_ROOT="${DEVPACK_ROOT:-/tmp/devpack}"
mkdir -p "$DEVPACK_ROOT/site" || return 1
tar -xJf "$DEVPACK_DIR/tritonserver.tar.xz" -C "$DEVPACK_ROOT" || return 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$DEVPACK_ROOT/site" "$DEVPACK_DIR"/wheels/*.whl || return 1

PY3="$(command -v python3)"
export DEVPACK_TRITON="$DEVPACK_ROOT/pytriton/tritonserver"
export PYTHONPATH="$DEVPACK_ROOT/site:$DEVPACK_ROOT:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export LD_LIBRARY_PATH="/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$(dirname "$PY3"):$PATH"
export PYTHONUNBUFFERED=1
