#!/usr/bin/env bash
# A/B in one process (benchmarks/ab_inprocess.py) of two copies of the package, without
# touching the source tree: both copies go to $AB (default /tmp/ab). By default "old" is
# this tree pure and "new" this tree compiled with the venv's mypyc (what the build buys);
# OLD_REF=<git revision> takes "old" from that revision instead and compiles both sides
# (a change measured on the compiled build, as the server runs it).
#   benchmarks/mypyc_ab.sh                      # the build's module list (_compiled.MODULES)
#   MODULES="server/resp.py engine/args.py" BLOCKS=40 benchmarks/mypyc_ab.sh
#   ROWS=hset,hget,lpush benchmarks/mypyc_ab.sh
#   OLD_REF=d5f2851 ROWS=set,get,hset_r benchmarks/mypyc_ab.sh   # before/after, both compiled
# Needs a C compiler and Python's headers (mypyc calls the compiler through setuptools).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
AB="${AB:-/tmp/ab}"
BLOCKS="${BLOCKS:-30}"
ROWS="${ROWS:-ping,set,get,wset,wget,capp}"
OLD_REF="${OLD_REF:-}"
rm -rf "$AB" && mkdir -p "$AB"
for side in old new; do
    src="$ROOT/src"
    if [ "$side" = old ] && [ -n "$OLD_REF" ]; then
        src="$AB/ref-src"
        mkdir -p "$src" && git -C "$ROOT" archive "$OLD_REF" src/hotkv_server | tar -x -C "$AB/ref-src" --strip-components=1
    fi
    # the sources only: the checkout's own build (.so files, stamp) is for hotkv_server
    (cd "$src" && find hotkv_server -name '*.py' -o -name '*.lua' -o -name py.typed) \
        | while read -r f; do mkdir -p "$AB/$(dirname "$f")"; cp "$src/$f" "$AB/$f"; done
    mv "$AB/hotkv_server" "$AB/hotkv_$side"
    grep -rl hotkv_server "$AB/hotkv_$side" | xargs sed -i "s/hotkv_server/hotkv_$side/g"
done
compiled=(new)
[ -n "$OLD_REF" ] && compiled=(old new)
for side in "${compiled[@]}"; do
    # each side's own module list (_compiled.MODULES), unless MODULES is given
    modules="${MODULES:-$(cd "$AB" && "$ROOT/.venv/bin/python" -c \
        "from hotkv_$side import _compiled; print(' '.join(_compiled.MODULES))")}"
    targets=()
    for m in $modules; do targets+=("hotkv_$side/$m"); done
    (cd "$AB" && "$ROOT/.venv/bin/mypyc" --ignore-missing-imports "${targets[@]}" > "$AB/mypyc-$side.log" 2>&1) \
        || { echo "mypyc failed, see $AB/mypyc-$side.log" >&2; exit 1; }
    # the stamp hotkv_<side>._compiled checks at import, so its compiled modules load
    (cd "$AB" && "$ROOT/.venv/bin/python" -c \
        "import json, hotkv_$side._compiled as c; c.STAMP.write_text(json.dumps({'sources': c.source_hash(), 'files': c.built_names()}))")
done
AB_PATH="$AB" exec "$ROOT/.venv/bin/python" "$ROOT/benchmarks/ab_inprocess.py" \
    "$ROWS" "$BLOCKS" "$@"
