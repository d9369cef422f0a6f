"""The HotKV product's ``VSIM.*`` vector index (``hotkv-client`` 1.0.0's ``vsim_*``, the
LangGraph store of ``langgraph-checkpoint-hotkv``): VSIM.CREATEINDEX DROPINDEX SET GET DEL
SEARCH INFO, and the named snapshots VSIM.SAVE LOAD LIST DROP.

An index is a vector set of the keyspace (``stores/vectorset.py``, family "vsim": FP32
vectors under the index's metric, kept while empty), so it shares the HNSW engine, the
search threads, persistence, replication, DEL/EXPIRE/RENAME and memory accounting with
Redis 8 vector sets. VSIM.SEARCH answers ``[key, distance, ...]`` nearest first: the cosine
distance ``1 - cos`` (so ``1 - distance`` is the similarity the LangGraph store reports),
the euclidean distance under ``l2``, ``1 - dot`` under ``ip``.

hotkv's extension: ``VSIM.SET index key v1 .. vd [TAGS tag ...]`` stores tags with the
vector (as its attributes ``{"tags": [...]}``, VGETATTR shows them), and ``VSIM.SEARCH ...
FILTER tag ...`` keeps the keys carrying every tag named, inside the graph walk.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from hotkv_server.commands.tenancy import readable_filter, readable_ids
from hotkv_server.commands.typed import read, target
from hotkv_server.commands.vsim import run_search
from hotkv_server.engine.args import parse_float, parse_int
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import family
from hotkv_server.engine.replies import OK, Double
from hotkv_server.stores.keyspace_effects import KvDel, KvPut
from hotkv_server.stores.vectorset import (
    DEFAULT_EF_CONSTRUCTION,
    DEFAULT_M,
    DEFAULT_SEARCH_EF,
    MAX_DIM,
    METRICS,
    Element,
    VectorSetValue,
    quantize,
)
from hotkv_server.stores.vectorset_effects import KvVadd, KvVrem
from hotkv_server.stores.vsearch import Check
from hotkv_server.stores.vsnap_effects import VsnapDrop, VsnapSave

command = family(group="vector_set", dialect=True)

NO_INDEX = "ERR no such index"


def _index(ctx: Context, name: bytes, *, write: bool = False) -> VectorSetValue:
    found = (target if write else read)(ctx, name, VectorSetValue)
    if found is None or found.family != "vsim":
        raise CommandError(NO_INDEX)
    return found


def _positive(raw: bytes, name: str, hi: int = 1_000_000) -> int:
    value = parse_int(raw)
    if value is None or value < 1 or value > hi:
        raise CommandError(f"ERR {name} must be an integer between 1 and {hi}")
    return value


def _vector(argv: list[bytes], at: int, dim: int) -> tuple[np.ndarray, int]:
    """``dim`` float arguments from ``argv[at]``: the vector and where the options start."""
    values: list[float] = []
    i = at
    while i < len(argv) and len(values) < dim:
        value = parse_float(argv[i])
        if value is None or math.isinf(value):
            break
        values.append(value)
        i += 1
    if len(values) != dim:
        raise CommandError(f"ERR vector must have {dim} float components (the index's dims)")
    return np.asarray(values, dtype=np.float32), i


@command("vsim.createindex", arity=-3, flags="write denyoom", key="RW insert")
def vsim_createindex(ctx: Context, argv: list[bytes]) -> Any:
    """VSIM.CREATEINDEX index dims [METRIC cosine|l2|ip] [M n] [EF_CONSTRUCTION n] [EF_SEARCH n]
    Creates a vector index with the given dimension and metric.
    """
    dim = _positive(argv[2], "dims", MAX_DIM)
    metric, m, efc, ef = "cosine", DEFAULT_M, DEFAULT_EF_CONSTRUCTION, DEFAULT_SEARCH_EF
    i = 3
    while i < len(argv):
        opt = argv[i].upper()
        if i + 1 >= len(argv):
            raise CommandError(f"ERR syntax error: {opt.decode(errors='replace')} needs a value")
        raw = argv[i + 1]
        if opt == b"METRIC":
            metric = raw.decode("utf-8", "replace").lower()
            if metric not in METRICS:
                raise CommandError("ERR METRIC must be cosine, l2 or ip")
        elif opt == b"M":
            m = _positive(raw, "M", 4096)
        elif opt == b"EF_CONSTRUCTION":
            efc = _positive(raw, "EF_CONSTRUCTION")
        elif opt == b"EF_SEARCH":
            ef = _positive(raw, "EF_SEARCH")
        else:
            raise CommandError(
                "ERR syntax error: expected METRIC, M, EF_CONSTRUCTION or EF_SEARCH")
        i += 2
    if target(ctx, argv[1], VectorSetValue) is not None:
        raise CommandError("ERR index already exists")
    state = VectorSetValue(dim, "f32", m, metric, ef_construction=efc, ef=ef,
                           family="vsim").settings()
    state["add"] = []
    ctx.emit(KvPut(argv[1], "vectorset", state, None))
    return OK


@command("vsim.dropindex", arity=2, flags="write", key="RM delete")
def vsim_dropindex(ctx: Context, argv: list[bytes]) -> Any:
    """VSIM.DROPINDEX index
    Drops a vector index.
    """
    _index(ctx, argv[1], write=True)
    ctx.emit(KvDel([argv[1]]))
    return OK


@command("vsim.set", arity=-4, flags="write denyoom", key="RW insert", extensions="TAGS")
def vsim_set(ctx: Context, argv: list[bytes]) -> Any:
    """VSIM.SET index key component [component ...] [TAGS tag [tag ...]]
    Stores the vector of a key in an index; 1 when the key is new.
    """
    found = _index(ctx, argv[1], write=True)
    vec, i = _vector(argv, 3, found.dim)
    attr: bytes | None = None
    if i < len(argv):
        if argv[i].upper() != b"TAGS" or i + 1 >= len(argv):
            raise CommandError("ERR syntax error: expected TAGS tag [tag ...] after the vector")
        tags = [t.decode("utf-8", "surrogateescape") for t in argv[i + 1:]]
        attr = json.dumps({"tags": tags}).encode()
    if found.metric == "cosine" and not np.any(vec):
        raise CommandError("ERR a zero vector has no direction under METRIC cosine")
    data, l2, qrange = quantize(vec, "f32", found.metric)
    added: int = ctx.emit(KvVadd(argv[1], argv[2], data, l2, qrange, attr))
    return added


@command("vsim.get", arity=3, flags="readonly fast", key="RO access")
def vsim_get(ctx: Context, argv: list[bytes]) -> Any:
    """VSIM.GET index key
    Returns the vector stored for a key, or nil.
    """
    element = _index(ctx, argv[1]).elements.get(argv[2])
    if element is None:
        return None
    return [Double(v) for v in _index(ctx, argv[1]).embedding(element)]


@command("vsim.del", arity=3, flags="write fast", key="RW delete")
def vsim_del(ctx: Context, argv: list[bytes]) -> Any:
    """VSIM.DEL index key
    Removes a key from an index.
    """
    if argv[2] not in _index(ctx, argv[1], write=True).elements:
        return 0
    removed: int = ctx.emit(KvVrem(argv[1], [argv[2]]))
    return removed


def _tag_check(tags: list[str]) -> Check:
    wanted = set(tags)

    def check(element: Element) -> bool:
        attrs = element.attributes()
        held = attrs.get("tags") if attrs is not None else None
        return isinstance(held, list) and wanted.issubset(held)

    return check


@command("vsim.search", arity=-4, flags="readonly", key="RO access")
def vsim_search(ctx: Context, argv: list[bytes]) -> Any:
    """VSIM.SEARCH index k component [component ...] [FILTER tag [tag ...]] [EF n]
    Returns the k nearest keys of a vector with their distance.
    """
    found = _index(ctx, argv[1])
    k = _positive(argv[2], "k")
    vec, i = _vector(argv, 3, found.dim)
    ef = found.ef
    tags: list[str] | None = None
    while i < len(argv):
        tok = argv[i].upper()
        if tok == b"EF" and i + 1 < len(argv) and parse_int(argv[i + 1]) is not None:
            ef = _positive(argv[i + 1], "EF")
            i += 2
        elif tok == b"FILTER" and tags is None:
            tags = []
            i += 1
        elif tags is not None:
            tags.append(argv[i].decode("utf-8", "surrogateescape"))
            i += 1
        else:
            raise CommandError("ERR syntax error: expected FILTER tag [tag ...] or EF n")
    if tags is not None and not tags:
        raise CommandError("ERR FILTER needs at least one tag")
    query = found.query_vector(vec)
    if found.metric == "cosine" and not np.any(vec):
        raise CommandError("ERR a zero vector has no direction under METRIC cosine")
    l2 = found.metric == "l2"

    def reply(hits: list[tuple[Element, float]]) -> Any:
        out: list[Any] = []
        for element, dist in hits:
            out.append(element.name)
            out.append(Double(math.sqrt(max(dist, 0.0)) if l2 else dist))
        return out

    check = _tag_check(tags) if tags else None
    return run_search(ctx, argv[1], found, query, k, max(ef, k), check, False, False, reply,
                      "vsim.search")


@command("vsim.info", arity=-1, flags="readonly", key="RO access")
def vsim_info(ctx: Context, argv: list[bytes]) -> Any:
    """VSIM.INFO [index]
    Lists the index names, or returns one index's settings and size.
    """
    if len(argv) > 2:
        raise CommandError("ERR wrong number of arguments for 'vsim.info' command")
    if len(argv) == 1:
        kv = ctx.db.kv
        readable = readable_filter(ctx)
        names = []
        for key in kv.ids(ctx.now_ms):
            value = kv.peek(key, ctx.now_ms)
            if isinstance(value, VectorSetValue) and value.family == "vsim" and (
                    readable is None or readable(key)):
                names.append(key)
        return sorted(names)
    found = _index(ctx, argv[1])
    return ["name", argv[1], "dims", found.dim, "metric", found.metric, "size",
            len(found.elements), "m", found.m, "ef_construction", found.ef_construction,
            "ef_search", found.ef, "memory", found.nbytes]


@command("vsim.save", arity=3, flags="write denyoom", key="OW update")
def vsim_save(ctx: Context, argv: list[bytes]) -> Any:
    """VSIM.SAVE snapshot blob
    Stores a snapshot blob under a name; returns its length.
    """
    stored: int = ctx.emit(VsnapSave(argv[1], argv[2]))
    return stored


@command("vsim.load", arity=2, flags="readonly", key="RO access")
def vsim_load(ctx: Context, argv: list[bytes]) -> Any:
    """VSIM.LOAD snapshot
    Returns the snapshot blob of a name, or nil.
    """
    return ctx.db.vsnap.blobs.get(argv[1])


@command("vsim.list", arity=1, flags="readonly")
def vsim_list(ctx: Context, argv: list[bytes]) -> Any:
    """VSIM.LIST
    Lists the snapshot names.
    """
    return readable_ids(ctx, sorted(ctx.db.vsnap.blobs))


@command("vsim.drop", arity=2, flags="write", key="RM delete")
def vsim_drop(ctx: Context, argv: list[bytes]) -> Any:
    """VSIM.DROP snapshot
    Deletes a stored snapshot.
    """
    if argv[1] not in ctx.db.vsnap.blobs:
        return 0
    dropped: int = ctx.emit(VsnapDrop(argv[1]))
    return dropped
