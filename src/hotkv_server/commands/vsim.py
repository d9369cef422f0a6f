"""Redis 8's VSIM: elements of a vector set by similarity to a vector or to an element.

The search (``stores/vsearch.py``) runs on the search threads (``commands/vector_threads``)
unless NOTHREAD, MULTI/EXEC, a script or a replica link says in place, as Redis threads
VSIM. The FILTER expression is parsed once here (``stores/vfilter.py``) and evaluated inside
hnswlib's graph walk. Replies are Redis 8's: RESP2 a flat array (element, then score and/or
attributes), RESP3 a map (element -> score, attributes, or [score, attributes]); the score
is ``1 - distance / 2`` with the cosine distance in [0, 2].

``FILTER-EF`` is accepted and checked; the search never gives up early (it returns COUNT
matches whenever that many match, falling back to an exact scan of the matches), so it
never answers fewer elements than Redis would.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hotkv_server.commands.typed import read
from hotkv_server.commands.vector_threads import search_elsewhere
from hotkv_server.commands.vsets import parse_vector
from hotkv_server.engine.args import parse_float, parse_int
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import command
from hotkv_server.engine.replies import Double
from hotkv_server.stores.vectorset import Element, VectorSetValue
from hotkv_server.stores.vfilter import FilterSyntaxError, compile_filter
from hotkv_server.stores.vsearch import Check, VectorSearch, filter_check

DEFAULT_COUNT = 10
MAX_EF = 1_000_000


def run_search(ctx: Context, key: bytes, vset: VectorSetValue, query: np.ndarray, count: int,
               ef: int, check: Check | None, exact: bool, in_place: bool,
               reply: Any, name: str) -> Any:
    """Search ``vset`` and build the reply with ``reply(hits)``, on a search thread unless
    ``in_place`` (a Deferred then) or in place."""
    search = VectorSearch(vset, query, count, ef, check, exact)
    if not in_place and vset._index is not None:
        deferred = search_elsewhere(
            ctx, vset, search.breadth, search.run, lambda: reply(search.finish()),
            current=lambda: ctx.db.kv.peek(key, ctx.core.clock.now_ms()) is vset, gone=reply([]), name=name)
        if deferred is not None:
            return deferred
    return reply(search.run_in_place())


def _query(vset: VectorSetValue, argv: list[bytes]) -> tuple[np.ndarray, int]:
    """VSIM's ELE / FP32 / VALUES query, projected and as it meets the index."""
    kind = argv[2].upper()
    if kind == b"ELE":
        element = vset.elements.get(argv[3])
        if element is None:
            raise CommandError("ERR element not found in set")
        return vset.indexed(element), 2
    if kind not in (b"FP32", b"VALUES"):
        parse_vector(argv, 2)  # Redis's error for a bad vector comes first
        raise CommandError("ERR vector type must be ELE, FP32 or VALUES")
    vec, used = parse_vector(argv, 2)
    dim = vec.shape[0]
    if vset.proj is not None and dim != vset.dim:
        if dim != vset.proj_input:
            raise CommandError(f"ERR Input dimension mismatch for projection - got {dim} "
                               f"but projection expects {vset.proj_input}")
        vec = vset.project(vec)
        dim = vset.dim
    if dim != vset.dim:
        raise CommandError(f"ERR Vector dimension mismatch - got {dim} but set has {vset.dim}")
    return vset.query_vector(vec), used


def _option_number(raw: bytes, error: str, *, integer: bool = True) -> float:
    value: float | None = parse_int(raw) if integer else parse_float(raw)
    if value is None or value <= 0:
        raise CommandError(error)
    return value


@command("vsim", arity=-4, flags="readonly", key="RO access", group="vector_set", since="8.0.0",
         complexity="O(log(N)) where N is the number of elements in the vector set.")
def vsim(ctx: Context, argv: list[bytes]) -> Any:
    """VSIM key ELE|FP32|VALUES vector-or-element [WITHSCORES] [WITHATTRIBS] [COUNT num] [EPSILON
        delta] [EF search-exploration-factor] [FILTER expression] [FILTER-EF max-filtering-effort]
        [TRUTH] [NOTHREAD]
    Returns elements by vector similarity.
    """
    key = argv[1]
    vset = read(ctx, key, VectorSetValue)
    if vset is None:
        return []
    query, used = _query(vset, argv)
    withscores = withattribs = truth = nothread = False
    count, ef, epsilon = DEFAULT_COUNT, 0, 2.0
    check: Check | None = None
    i = 2 + used
    while i < len(argv):
        opt = argv[i].upper()
        more = i + 1 < len(argv)
        if opt == b"WITHSCORES":
            withscores = True
        elif opt == b"WITHATTRIBS":
            withattribs = True
        elif opt == b"TRUTH":
            truth = True
        elif opt == b"NOTHREAD":
            nothread = True
        elif opt == b"COUNT" and more:
            count = int(_option_number(argv[i + 1], "ERR invalid COUNT"))
            i += 1
        elif opt == b"EPSILON" and more:
            epsilon = _option_number(argv[i + 1], "ERR invalid EPSILON", integer=False)
            i += 1
        elif opt == b"EF" and more:
            ef = int(_option_number(argv[i + 1], "ERR invalid EF"))
            if ef > MAX_EF:
                raise CommandError("ERR invalid EF")
            i += 1
        elif opt == b"FILTER-EF" and more:
            _option_number(argv[i + 1], "ERR invalid FILTER-EF")
            i += 1
        elif opt == b"FILTER" and more:
            text = argv[i + 1].decode("utf-8", "replace")
            try:
                check = filter_check(compile_filter(text))
            except FilterSyntaxError as exc:
                raise CommandError(
                    f"ERR syntax error in FILTER expression near: {exc.near}") from None
            i += 1
        else:
            raise CommandError("ERR syntax error in VSIM command")
        i += 1
    breadth = max(ef or vset.ef or DEFAULT_COUNT, count)
    resp3 = ctx.proto == 3

    def reply(hits: list[tuple[Element, float]]) -> Any:
        kept = [(e, d) for e, d in hits if d / 2.0 <= epsilon]
        if not (withscores or withattribs):
            return [e.name for e, _ in kept]
        if resp3:
            if withscores and withattribs:
                return {e.name: [Double(1.0 - d / 2.0), e.attr] for e, d in kept}
            if withscores:
                return {e.name: Double(1.0 - d / 2.0) for e, d in kept}
            return {e.name: e.attr for e, _ in kept}
        flat: list[Any] = []
        for e, d in kept:
            flat.append(e.name)
            if withscores:
                flat.append(Double(1.0 - d / 2.0))
            if withattribs:
                flat.append(e.attr)
        return flat

    return run_search(ctx, key, vset, query, count, breadth, check, truth, nothread, reply,
                      "vsim")
