"""Redis 8's vector-set commands except VSIM (``commands/vsim.py``): VADD VREM VCARD VDIM
VEMB VLINKS VINFO VSETATTR VGETATTR VRANDMEMBER VISMEMBER VRANGE.

Replies and error texts are Redis 8's (``modules/vector-sets/vset.c``). The handler
quantizes (``stores.vectorset.quantize``) and the effect carries the stored bytes, so the
AOF and the replicas index exactly the same floats. ``CAS`` is accepted and the insert is
done at once on the loop thread (the result is the same; hnswlib offers no separate
candidate search). VADD's ``EF`` is the index's build breadth, set by the set's first VADD
(hnswlib fixes ef_construction per index).
"""

from __future__ import annotations

import bisect
import math
import random
from typing import Any

import numpy as np

from hotkv_server.commands.hashes import check_repeats, pick
from hotkv_server.commands.typed import read, target
from hotkv_server.engine import errors
from hotkv_server.engine.args import parse_float, parse_int
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import SpecFields, family
from hotkv_server.engine.replies import NULL_ARRAY, Double, Simple
from hotkv_server.stores.keyspace_effects import KvPut
from hotkv_server.stores.vectorset import (
    DEFAULT_EF_CONSTRUCTION,
    DEFAULT_M,
    DEFAULT_SEARCH_EF,
    MAX_DIM,
    VectorSetValue,
    quantize,
)
from hotkv_server.stores.vectorset_effects import KvVadd, KvVrem, KvVsetattr

command = family(group="vector_set")

INVALID_VECTOR = "ERR invalid vector specification"
MAX_M = 4096
MIN_M = 4
MAX_EF = 1_000_000


def parse_vector(argv: list[bytes], at: int) -> tuple[np.ndarray, int]:
    """``FP32 blob`` or ``VALUES n v1 .. vn`` at ``argv[at]``: the vector and the number of
    arguments it took; Redis's one error for anything wrong."""
    if at >= len(argv):
        raise CommandError(INVALID_VECTOR)
    kind = argv[at].upper()
    if kind == b"FP32":
        if at + 1 >= len(argv):
            raise CommandError(INVALID_VECTOR)
        blob = argv[at + 1]
        if len(blob) % 4 or not blob or len(blob) // 4 > MAX_DIM:
            raise CommandError(INVALID_VECTOR)
        vec = np.frombuffer(blob, dtype="<f4").astype(np.float32)
        if not np.all(np.isfinite(vec)):
            raise CommandError(INVALID_VECTOR)
        return vec, 2
    if kind == b"VALUES":
        dim = parse_int(argv[at + 1]) if at + 1 < len(argv) else None
        if dim is None or dim < 1 or dim > MAX_DIM or at + 2 + dim > len(argv):
            raise CommandError(INVALID_VECTOR)
        values = [parse_float(raw) for raw in argv[at + 2:at + 2 + dim]]
        if any(v is None or math.isinf(v) for v in values):
            raise CommandError(INVALID_VECTOR)
        return np.asarray(values, dtype=np.float32), dim + 2
    raise CommandError(INVALID_VECTOR)


def _int_option(raw: bytes, lo: int, hi: int, error: str) -> int:
    value = parse_int(raw)
    if value is None or value < lo or value > hi:
        raise CommandError(error)
    return value


@command("vadd", arity=-5, flags="write denyoom", key="RW insert", since="8.0.0",
         complexity="O(log(N)) for each element added")
def vadd(ctx: Context, argv: list[bytes]) -> Any:
    """VADD key [REDUCE dim] FP32|VALUES vector element [CAS] [NOQUANT|Q8|BIN] [EF
        build-exploration-factor] [SETATTR attributes] [M numlinks]
    Adds one or more elements to a vector set, or updates its vector if it exists.
    """
    at = 2
    reduce_dim = 0
    if len(argv) > 4 and argv[2].upper() == b"REDUCE":
        rdim = parse_int(argv[3])
        if rdim is None or rdim <= 0:
            raise CommandError(INVALID_VECTOR)
        reduce_dim, at = rdim, 4
    vec, used = parse_vector(argv, at)
    if reduce_dim > vec.shape[0]:
        raise CommandError(INVALID_VECTOR)
    at += used
    if at >= len(argv):
        raise CommandError(errors.wrong_arity("vadd"))
    element = argv[at]
    quant, ef, m, attr = "int8", DEFAULT_EF_CONSTRUCTION, DEFAULT_M, None
    i = at + 1
    while i < len(argv):
        opt = argv[i].upper()
        more = i + 1 < len(argv)
        if opt == b"CAS":
            pass
        elif opt == b"EF" and more:
            ef = _int_option(argv[i + 1], 1, MAX_EF, "ERR invalid EF")
            i += 1
        elif opt == b"M" and more:
            m = _int_option(argv[i + 1], MIN_M, MAX_M, "ERR invalid M")
            i += 1
        elif opt == b"SETATTR" and more:
            attr = argv[i + 1]
            i += 1
        elif opt in (b"NOQUANT", b"Q8", b"BIN"):
            quant = {b"NOQUANT": "f32", b"Q8": "int8", b"BIN": "bin"}[opt]
        else:
            raise CommandError("ERR invalid option after element")
        i += 1
    key = argv[1]
    found = target(ctx, key, VectorSetValue)
    dim = vec.shape[0]
    if found is None:
        fresh = VectorSetValue(reduce_dim or dim, quant, m, proj_input=dim if reduce_dim else 0,
                               ef_construction=ef)
        data, l2, qrange = quantize(fresh.project(vec), quant)
        state = fresh.settings()
        state["add"] = [[element, data, l2, qrange, attr]]
        ctx.emit(KvPut(key, "vectorset", state, None))
        return True
    if found.quant != quant:
        raise CommandError("ERR asked quantization mismatch with existing vector set")
    if found.m != m:
        raise CommandError("ERR asked M value mismatch with existing vector set")
    if (found.proj is None and found.dim != dim) or (found.proj is not None
                                                     and found.dim != reduce_dim and reduce_dim):
        raise CommandError(f"ERR Vector dimension mismatch - got {dim} but set has {found.dim}")
    if reduce_dim and found.proj is None:
        raise CommandError("ERR cannot add projection to existing set without projection")
    if found.proj is not None:
        if dim != found.proj_input:
            raise CommandError(f"ERR Input dimension mismatch for projection - got {dim} "
                               f"but projection expects {found.proj_input}")
        vec = found.project(vec)
    data, l2, qrange = quantize(vec, quant, found.metric)
    added: int = ctx.emit(KvVadd(key, element, data, l2, qrange, attr))
    return bool(added)


@command("vrem", arity=3, flags="write", key="RW delete", since="8.0.0",
         complexity="O(log(N)) for each element removed")
def vrem(ctx: Context, argv: list[bytes]) -> Any:
    """VREM key element
    Removes an element from a vector set.
    """
    found = target(ctx, argv[1], VectorSetValue)
    if found is None or argv[2] not in found.elements:
        return False
    ctx.emit(KvVrem(argv[1], [argv[2]]))
    return True


@command("vcard", arity=2, flags="readonly fast", key="RO access", since="8.0.0")
def vcard(ctx: Context, argv: list[bytes]) -> Any:
    """VCARD key
    Returns the number of elements in a vector set.
    """
    found = read(ctx, argv[1], VectorSetValue)
    return 0 if found is None else len(found.elements)


@command("vdim", arity=2, flags="readonly fast", key="RO access", since="8.0.0")
def vdim(ctx: Context, argv: list[bytes]) -> Any:
    """VDIM key
    Returns the dimension of vectors in the vector set.
    """
    found = read(ctx, argv[1], VectorSetValue)
    if found is None:
        raise CommandError("ERR key does not exist")
    return found.dim


@command("vemb", arity=-3, flags="readonly fast", key="RO access", since="8.0.0")
def vemb(ctx: Context, argv: list[bytes]) -> Any:
    """VEMB key element [RAW]
    Returns the vector associated with an element.
    """
    raw = False
    for opt in argv[3:]:
        if opt.upper() != b"RAW":
            raise CommandError("ERR invalid option")
        raw = True
    found = read(ctx, argv[1], VectorSetValue)
    element = None if found is None else found.elements.get(argv[2])
    if found is None or element is None:
        return None
    if raw:
        out: list[Any] = [Simple(found.quant), found.raw(element), Double(element.l2)]
        if found.quant == "int8":
            out.append(Double(element.qrange))
        return out
    return [Double(v) for v in found.embedding(element)]


@command("vsetattr", arity=4, flags="write fast", key="RW update", since="8.0.0")
def vsetattr(ctx: Context, argv: list[bytes]) -> Any:
    """VSETATTR key element json
    Associates or removes the JSON attributes of elements.
    """
    found = target(ctx, argv[1], VectorSetValue)
    if found is None or argv[2] not in found.elements:
        return False
    ctx.emit(KvVsetattr(argv[1], argv[2], argv[3]))
    return True


#: what VGETATTR and VISMEMBER share
_VMEMBER = SpecFields(arity=3, flags="readonly fast", key="RO access", since="8.0.0")


@command("vgetattr", _VMEMBER)
def vgetattr(ctx: Context, argv: list[bytes]) -> Any:
    """VGETATTR key element
    Retrieves the JSON attributes of elements.
    """
    found = read(ctx, argv[1], VectorSetValue)
    element = None if found is None else found.elements.get(argv[2])
    return None if element is None else element.attr


@command("vismember", _VMEMBER)
def vismember(ctx: Context, argv: list[bytes]) -> Any:
    """VISMEMBER key element
    Checks if an element exists in a vector set.
    """
    found = read(ctx, argv[1], VectorSetValue)
    return found is not None and argv[2] in found.elements


@command("vlinks", arity=-3, flags="readonly", key="RO access", since="8.0.0")
def vlinks(ctx: Context, argv: list[bytes]) -> Any:
    """VLINKS key element [WITHSCORES]
    Returns the neighbors of an element at each layer of the HNSW graph.
    """
    if len(argv) > 4 or (len(argv) == 4 and argv[3].upper() != b"WITHSCORES"):
        raise CommandError(errors.wrong_arity("vlinks"))
    withscores = len(argv) == 4
    found = read(ctx, argv[1], VectorSetValue)
    element = None if found is None else found.elements.get(argv[2])
    if found is None or element is None:
        return None
    found.quiesce()
    mine = found.indexed(element)
    out: list[Any] = []
    for labels in found.levels(element):
        linked = [found._by_label[label] for label in labels]
        names = [e for e in linked if e is not None]
        if withscores:
            out.append({e.name: Double(1.0 - found.distance(mine, found.indexed(e)) / 2.0)
                        for e in names})
        else:
            out.append([e.name for e in names])
    return out


@command("vinfo", arity=2, flags="readonly fast", key="RO access", since="8.0.0")
def vinfo(ctx: Context, argv: list[bytes]) -> Any:
    """VINFO key
    Returns information about a vector set.
    """
    found = read(ctx, argv[1], VectorSetValue)
    if found is None:
        return NULL_ARRAY
    levels = _max_level(found) if found._index is not None and found.elements else 0
    return {
        Simple("quant-type"): Simple(found.quant),
        Simple("hnsw-m"): found.m,
        Simple("vector-dim"): found.dim,
        Simple("projection-input-dim"): found.proj_input,
        Simple("size"): len(found.elements),
        Simple("max-level"): levels,
        Simple("attributes-count"): found.numattribs,
        Simple("vset-uid"): found.uid,
        Simple("hnsw-max-node-uid"): found.max_node_uid,
    }


def _max_level(found: VectorSetValue) -> int:
    assert found._index is not None
    found.quiesce()
    state = found._index.__getstate__()[0]
    levels = np.frombuffer(state["element_levels"], dtype=np.int32)
    return int(levels.max()) if levels.size else 0


@command("vrandmember", arity=-2, flags="readonly", key="RO access", since="8.0.0")
def vrandmember(ctx: Context, argv: list[bytes]) -> Any:
    """VRANDMEMBER key [count]
    Returns one or multiple random members from a vector set.
    """
    if len(argv) > 3:
        raise CommandError(errors.wrong_arity("vrandmember"))
    count = None
    if len(argv) == 3:
        count = parse_int(argv[2])
        if count is None:
            raise CommandError("ERR COUNT value is not an integer")
        if count == 0:
            return []
        check_repeats(count)  # a negative count asking for more than one reply can hold
    found = read(ctx, argv[1], VectorSetValue)
    if found is None or not found.elements:
        return None if count is None else []
    names = list(found.elements)
    if count is None:
        return random.choice(names)
    return pick(names, count)


def _range_bound(raw: bytes, which: str) -> tuple[bytes | None, bool]:
    """``-``/``+`` (None), ``[x`` (inclusive) or ``(x``; Redis's error otherwise."""
    if raw in (b"-", b"+"):
        return None, True
    if len(raw) < 2 or raw[:1] not in (b"[", b"("):
        raise CommandError(f"ERR invalid {which} range format")
    return raw[1:], raw[:1] == b"["


@command("vrange", arity=-4, flags="readonly", key="RO access", since="8.2.0")
def vrange(ctx: Context, argv: list[bytes]) -> Any:
    """VRANGE key start end [count]
    Returns elements in a lexicographical range.
    """
    if len(argv) > 5:
        raise CommandError(errors.wrong_arity("vrange"))
    count = -1
    if len(argv) == 5:
        parsed = parse_int(argv[4])
        if parsed is None:
            raise CommandError("ERR invalid COUNT value")
        count = parsed
    start, start_incl = _range_bound(argv[2], "start")
    end, end_incl = _range_bound(argv[3], "end")
    if argv[2] == b"+" or argv[3] == b"-":
        raise CommandError("ERR '-' can only be used as first argument, '+' only as second")
    found = read(ctx, argv[1], VectorSetValue)
    if found is None:
        return []
    names = found.sorted_names()
    lo = 0 if start is None else (bisect.bisect_left(names, start) if start_incl
                                  else bisect.bisect_right(names, start))
    out: list[bytes] = []
    for name in names[lo:]:
        if count >= 0 and len(out) >= count:
            break
        if end is not None and (name > end if end_incl else name >= end):
            break
        out.append(name)
    return out


__all__ = ["DEFAULT_SEARCH_EF", "parse_vector"]
