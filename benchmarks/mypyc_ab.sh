#!/usr/bin/env bash
# A/B of the mypyc-compiled hot path against the pure-Python tree, in one process
# (benchmarks/ab_inprocess.py), without touching the source tree: both copies go to $AB
# (default /tmp/ab), the "new" one compiled with the venv's mypyc.
#   benchmarks/mypyc_ab.sh                      # the build's module list (_compiled.MODULES)
#   MODULES="server/resp.py engine/args.py" BLOCKS=40 benchmarks/mypyc_ab.sh
#   ROWS=hset,hget,lpush benchmarks/mypyc_ab.sh
# Needs a C compiler and Python's headers (mypyc calls the compiler through setuptools).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
AB="${AB:-/tmp/ab}"
BLOCKS="${BLOCKS:-30}"
ROWS="${ROWS:-ping,set,get,wset,wget,capp}"
DEFAULT_MODULES="$(cd "$ROOT/src" && "$ROOT/.venv/bin/python" -c \
    'from hotkv_server import _compiled; print(" ".join(_compiled.MODULES))')"
MODULES="${MODULES:-$DEFAULT_MODULES}"
rm -rf "$AB" && mkdir -p "$AB"
for side in old new; do
    # the sources only: the checkout's own build (.so files, stamp) is for hotkv_server
    (cd "$ROOT/src" && find hotkv_server -name '*.py' -o -name '*.lua' -o -name py.typed) \
        | while read -r f; do mkdir -p "$AB/$(dirname "$f")"; cp "$ROOT/src/$f" "$AB/$f"; done
    mv "$AB/hotkv_server" "$AB/hotkv_$side"
    grep -rl hotkv_server "$AB/hotkv_$side" | xargs sed -i "s/hotkv_server/hotkv_$side/g"
done
targets=()
for m in $MODULES; do targets+=("hotkv_new/$m"); done
(cd "$AB" && "$ROOT/.venv/bin/mypyc" --ignore-missing-imports "${targets[@]}" > "$AB/mypyc.log" 2>&1) \
    || { echo "mypyc failed, see $AB/mypyc.log" >&2; exit 1; }
# the stamp hotkv_new._compiled checks at import, so its compiled modules load
(cd "$AB" && "$ROOT/.venv/bin/python" -c \
    'import json, hotkv_new._compiled as c; c.STAMP.write_text(json.dumps({"sources": c.source_hash(), "files": c.built_names()}))')
AB_PATH="$AB" exec "$ROOT/.venv/bin/python" "$ROOT/benchmarks/ab_inprocess.py" \
    "$ROWS" "$BLOCKS" "$@"
