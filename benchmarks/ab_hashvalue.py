"""A/B of ``HashValue`` alone (stores/hashes.py), two trees in ONE process, interleaved.

The same two renamed copies of the package as ``ab_inprocess.py`` (its docstring says how
to make them: ``hotkv_old`` and ``hotkv_new`` under ``AB_PATH``). For hashes of 1, 10 and
100 fields (8-byte names, 32-byte values, as growth.py's), the get, the miss and the
same-value set of the last field (as the HSET applier calls it), in blocks of 1,000 calls alternating between the trees;
the table gives the best block of each, in ns a call.

    AB_PATH=/tmp/ab .venv/bin/python benchmarks/ab_hashvalue.py [blocks]
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from collections.abc import Callable
from typing import Any

VALUE = b"v" * 24 + b"01234567"
OTHER = b"w" * 24 + b"01234567"


def best_of(cases: dict[str, Callable[[], Any]], blocks: int, calls: int = 1000) -> dict[str, float]:
    best = dict.fromkeys(cases, 1.0)
    for _ in range(blocks):
        for name, fn in cases.items():
            started = time.perf_counter()
            for _ in range(calls):
                fn()
            best[name] = min(best[name], (time.perf_counter() - started) / calls)
    return best


def cases_for(a: Any, b: Any, field: bytes) -> dict[str, Callable[[], Any]]:
    """The calls to time on the old tree's hash ``a`` and the new tree's ``b``."""
    # the old tree's reads went through its dict, ``fields``; a tree with ``set_field``
    # applies an HSET of one pair with it (the applier's call), else with ``set_fields``
    a_get = a.fields.get if hasattr(a, "fields") else a.get

    def setter(h: Any) -> Callable[[], Any]:
        set_one = setter_of(h)
        return lambda: set_one(field, VALUE)

    def replacer(h: Any) -> Callable[[], Any]:
        values = [OTHER, VALUE]  # the same length: a value replaced, in place
        set_one = setter_of(h)
        return lambda: set_one(field, values.reverse() or values[0])

    def adder(h: Any) -> Callable[[], Any]:
        base = h._packed  # both trees' packed form: reset, then a new field at the end
        set_one = setter_of(h)

        def add() -> Any:
            h._packed = base
            return set_one(b"newfield", VALUE)
        return add

    return {
        "old get": lambda: a_get(field), "new get": lambda: b.get(field),
        "old miss": lambda: a_get(b"nope"), "new miss": lambda: b.get(b"nope"),
        "old set": setter(a), "new set": setter(b),
        "old repl": replacer(a), "new repl": replacer(b),
        "old add": adder(a), "new add": adder(b),
    }


def setter_of(h: Any) -> Callable[[bytes, bytes], Any]:
    """One field's set on a hash (``set_field``) or a scratchpad (``set``)."""
    return h.set_field if hasattr(h, "set_field") else h.set


def main() -> None:
    sys.path.insert(0, os.environ.get("AB_PATH", "/tmp/ab"))
    blocks = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    old = importlib.import_module("hotkv_old.stores.hashes").HashValue
    new = importlib.import_module("hotkv_new.stores.hashes").HashValue
    print("| fields | op | before | after |\n|---:|---|---:|---:|")
    for n in (1, 10, 100):
        pairs = [x for i in range(n) for x in (b"field:%02d" % i, VALUE)]
        best = best_of(cases_for(old.restore(pairs), new.restore(pairs), pairs[-2]), blocks)
        for op in ("get", "miss", "set", "repl", "add"):
            print(f"| {n} | {op} | {best['old ' + op] * 1e9:.0f} ns | {best['new ' + op] * 1e9:.0f} ns |",
                  flush=True)
    # the same calls on a work scratchpad (stores/workpad.py: AMEM.WORK.SET/GET's store)
    old_pad = importlib.import_module("hotkv_old.stores.workpad").Scratchpad
    new_pad = importlib.import_module("hotkv_new.stores.workpad").Scratchpad
    print("\n| notes | op | before | after |\n|---:|---|---:|---:|")
    for n in (1, 10):
        pairs = [x for i in range(n) for x in (b"field:%02d" % i, VALUE)]
        best = best_of(cases_for(old_pad.loaded(None, [[pairs[i], pairs[i + 1], None] for i in range(0, len(pairs), 2)]),
                                 new_pad.loaded(None, [[pairs[i], pairs[i + 1], None] for i in range(0, len(pairs), 2)]),
                                 pairs[-2]), blocks)
        for op in ("get", "miss", "set", "repl", "add"):
            print(f"| {n} | {op} | {best['old ' + op] * 1e9:.0f} ns | {best['new ' + op] * 1e9:.0f} ns |",
                  flush=True)


if __name__ == "__main__":
    main()
