# Sourced on the device machine from the repository root: `source devstack/carry/remote.sh`.
# Unpacks what devstack/carry/pack.py put in .devpack/ into /tmp and sets the paths for it:
#   DEVPACK_TRITON     the trimmed tritonserver folder (bin/, backends/, stubs)
#   PYTHONPATH         the carried packages (site.tar.xz's site/, or the wheels installed),
#                      the trimmed `pytriton` (serving.server finds the server through it),
#                      then this checkout
#   LD_LIBRARY_PATH    the host's libpython 3.12 first (the Python-backend stub embeds it),
#                      through links to it alone
#   PATH               the python3 that holds torch first (the stub takes sys.path from it),
#                      then Debian's redis-server from .devpack/debs (when packed)
# Extend it beside pack.py: unpack a new file here, export what it needs.

DEVPACK_DIR="${DEVPACK_DIR:-$PWD/.devpack}"
DEVPACK_ROOT="${DEVPACK_ROOT:-/tmp/devpack}"
mkdir -p "$DEVPACK_ROOT/site" || return 1
if [ -f "$DEVPACK_DIR/tritonserver.tar.xz" ]; then  # not carried for CPU-only runs
    tar -xJf "$DEVPACK_DIR/tritonserver.tar.xz" -C "$DEVPACK_ROOT" || return 1
fi
tar -xJf "$DEVPACK_DIR/site.tar.xz" -C "$DEVPACK_ROOT" || return 1  # the packages: site/

PY3="$(command -v python3)"
export DEVPACK_TRITON="$DEVPACK_ROOT/pytriton/tritonserver"
export PYTHONPATH="$DEVPACK_ROOT/site:$DEVPACK_ROOT:$PWD${PYTHONPATH:+:$PYTHONPATH}"
# The stub's libpython 3.12 goes first on the loader's path, in a folder of links to it
# alone: with the whole /usr/lib/x86_64-linux-gnu first, the host's cuDNN 9.14 shadowed the
# 9.19 that torch bundles ("cuDNN version incompatibility", and cuDNN attention failed in
# graph capture, 2026-12-03).
DEVPACK_LIBPYTHON="$DEVPACK_ROOT/libpython"
mkdir -p "$DEVPACK_LIBPYTHON" || return 1
for lib in /usr/lib/x86_64-linux-gnu/libpython3.12.so*; do
    [ -e "$lib" ] && ln -sf "$lib" "$DEVPACK_LIBPYTHON/"
done
export LD_LIBRARY_PATH="$DEVPACK_LIBPYTHON${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$(dirname "$PY3"):$PATH"
export PYTHONUNBUFFERED=1

# Debian's redis-server, unpacked into a folder of its own (never into /). Only the
# libraries that the device's loader cannot find go on LD_LIBRARY_PATH, in a folder of
# links: the device's own libssl and friends stay the ones everything else loads.
if [ -d "$DEVPACK_DIR/debs" ]; then
    DEVPACK_REDIS="$DEVPACK_ROOT/redis"
    mkdir -p "$DEVPACK_REDIS/missing" || return 1
    for deb in "$DEVPACK_DIR"/debs/*.deb; do dpkg-deb -x "$deb" "$DEVPACK_REDIS" || return 1; done
    for _ in 1 2 3 4; do  # a library found now may itself need one the device lacks
        missing="$(LD_LIBRARY_PATH="$DEVPACK_REDIS/missing:$LD_LIBRARY_PATH" \
            ldd "$DEVPACK_REDIS/usr/bin/redis-check-rdb" | awk '/not found/ {print $1}')"
        [ -z "$missing" ] && break
        for lib in $missing; do
            found="$(find "$DEVPACK_REDIS/lib" "$DEVPACK_REDIS/usr/lib" -name "$lib" 2>/dev/null | head -n 1)"
            [ -n "$found" ] && ln -sf "$found" "$DEVPACK_REDIS/missing/$lib"
        done
    done
    export PATH="$PATH:$DEVPACK_REDIS/usr/bin"
    export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$DEVPACK_REDIS/missing"
    echo "remote.sh: redis-server $(redis-server --version | awk '{print $3}'), carried libraries: $(ls "$DEVPACK_REDIS/missing" | tr '\n' ' ')"
fi
