#!/usr/bin/env bash
# A/B of a mypyc-compiled hot path against the pure-Python tree, in one process
# (benchmarks/ab_inprocess.py), without touching the source tree: both copies go to $AB
# (default /tmp/ab), the "new" one compiled with the venv's mypyc.
#   benchmarks/mypyc_ab.sh                      # the default module list, 30 blocks
#   MODULES="server/resp.py engine/args.py" BLOCKS=40 benchmarks/mypyc_ab.sh
# Needs a C compiler and Python's headers (mypyc calls the compiler through setuptools).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
AB="${AB:-/tmp/ab}"
BLOCKS="${BLOCKS:-30}"
MODULES="${MODULES:-server/resp.py server/framing.py engine/args.py engine/dispatch.py engine/effects.py server/connection.py stores/keyspace.py commands/strings.py commands/work.py}"
rm -rf "$AB" && mkdir -p "$AB"
cp -r "$ROOT/src/hotkv_server" "$AB/hotkv_old"
cp -r "$ROOT/src/hotkv_server" "$AB/hotkv_new"
grep -rl hotkv_server "$AB/hotkv_old" | xargs sed -i 's/hotkv_server/hotkv_old/g'
grep -rl hotkv_server "$AB/hotkv_new" | xargs sed -i 's/hotkv_server/hotkv_new/g'
targets=()
for m in $MODULES; do targets+=("hotkv_new/$m"); done
(cd "$AB" && "$ROOT/.venv/bin/mypyc" "${targets[@]}" > "$AB/mypyc.log" 2>&1) \
    || { echo "mypyc failed, see $AB/mypyc.log" >&2; exit 1; }
AB_PATH="$AB" exec "$ROOT/.venv/bin/python" "$ROOT/benchmarks/ab_inprocess.py" \
    ping,set,get,wset,wget,capp "$BLOCKS"
