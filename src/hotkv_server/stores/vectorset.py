"""The vector-set value type: Redis 8 vector sets (``VADD``, ``VSIM`` ...) and HotKV's
``VSIM.*`` indexes, one keyspace type (``TYPE`` answers ``vectorset``) on the shared vector
engine (:class:`~hotkv_server.stores.hnsw.HnswGraph`).

Each element has a name, a vector and optional JSON attributes. What the HNSW index holds,
per quantization (``quant``, VINFO's names):

* ``f32`` (``NOQUANT``): the vector normalized to unit length, as FP32;
* ``int8`` (``Q8``, the default): ``q * range / 127`` with ``q`` the int8 quantization of
  the normalized vector and ``range`` its largest absolute component;
* ``bin`` (``BIN``): ``+-1/sqrt(dim)`` per component by its sign (queries are binarized too,
  so the cosine distance is ``2 * hamming / dim``, Redis's).

hnswlib computes distances on float32 only, so in memory every mode costs 4 bytes per
component inside the graph; the quantized form is the *stored truth* elsewhere: effects (AOF,
replicas) carry the int8 bytes or the bit words with the norm and range, and the applier
dequantizes them the same way everywhere; the int8 values and bits are recoverable from the
indexed floats exactly (``rint(v * 127 / range)``, the sign), which VEMB RAW uses.
VEMB returns the dequantized vector times the norm (``bin``: the +-1 signs, as Redis).

A set made by ``VSIM.CREATEINDEX`` (``family`` "vsim") keeps ``f32`` vectors under its
metric (``cosine`` normalized, ``l2`` and ``ip`` as given) and stays in the keyspace while
empty (only VSIM.DROPINDEX or DEL removes it); a Redis vector set goes when its last element
does, as in Redis.

Effects (``vectorset_effects``): ``KvPut(key, "vectorset", state)`` creates a set (its
settings and its first elements as ``add`` rows), ``KvVadd``, ``KvVrem``, ``KvVsetattr``
change it. A snapshot holds the hnswlib index in its own format, so a restart does not
re-insert; ``restore`` takes both forms.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

import numpy as np

from hotkv_server.stores.effect import Effect, EffectError
from hotkv_server.stores.hnsw import VECTOR_DTYPE, HnswGraph
from hotkv_server.stores.values import Applier, TypedValue, value_type
from hotkv_server.stores.vectorset_effects import KvVadd, KvVrem, KvVsetattr
from hotkv_server.stores.vfilter import parse_attributes

QUANTS: tuple[str, ...] = ("f32", "int8", "bin")
METRICS: tuple[str, ...] = ("cosine", "l2", "ip")
DEFAULT_M = 16
DEFAULT_EF_CONSTRUCTION = 200
DEFAULT_SEARCH_EF = 100
MAX_DIM = 1 << 16
#: bytes an element costs beside its vector (the Element object, dict slot, name object)
ELEMENT_OVERHEAD = 200
SET_OVERHEAD = 600
_UNPARSED: Any = object()


class Element:
    """One element: its name, hnswlib label, norm, Q8 range and JSON attributes."""

    __slots__ = ("_parsed", "attr", "l2", "label", "name", "qrange")

    def __init__(self, name: bytes, label: int, l2: float, qrange: float,
                 attr: bytes | None) -> None:
        self.name = name
        self.label = label
        self.l2 = l2
        self.qrange = qrange
        self.attr = attr
        self._parsed: Any = _UNPARSED

    def attributes(self) -> dict[str, Any] | None:
        """The attributes parsed (once, then kept: derived data) or None."""
        parsed = self._parsed
        if parsed is _UNPARSED:
            parsed = self._parsed = parse_attributes(self.attr)
        return parsed

    def row(self) -> list[Any]:
        return [self.name, self.label, self.l2, self.qrange, self.attr]


def projection_matrix(input_dim: int, output_dim: int) -> np.ndarray:
    """REDUCE's deterministic projection (output_dim x input_dim): Hadamard signs
    (+1 where ``popcount(i & j)`` is even) scaled by 1/sqrt(input_dim), as Redis builds it."""
    i = np.arange(output_dim, dtype=np.uint32)[:, None]
    j = np.arange(input_dim, dtype=np.uint32)[None, :]
    both = i & j
    bits = np.zeros(both.shape, dtype=np.uint32)
    for shift in range(32):
        bits += (both >> shift) & 1
    signs = np.where(bits % 2 == 0, 1.0, -1.0).astype(np.float32)
    return signs * np.float32(1.0 / np.sqrt(input_dim))


def quantize(vector: np.ndarray, quant: str, metric: str = "cosine") -> tuple[bytes, float, float]:
    """A vector (float32, already projected) as stored: (data, l2 norm, Q8 range).

    The handler calls this and puts the result in the effect, so replay never quantizes."""
    if metric != "cosine":
        return vector.astype(VECTOR_DTYPE).tobytes(), 1.0, 0.0
    wide = vector.astype(np.float64)
    norm = float(np.linalg.norm(wide))
    unit = (wide / norm if norm > 0 else wide).astype(np.float32)
    if quant == "f32":
        return unit.astype(VECTOR_DTYPE).tobytes(), norm, 0.0
    if quant == "int8":
        top = float(np.max(np.abs(unit))) if unit.size else 0.0
        scale = 127.0 / top if top > 0 else 1.0
        q = np.clip(np.rint(unit.astype(np.float64) * scale), -127, 127).astype(np.int8)
        return q.tobytes(), norm, top
    bits = np.packbits(unit > 0, bitorder="little")
    words = np.zeros(8 * ((vector.shape[0] + 63) // 64), dtype=np.uint8)
    words[: bits.shape[0]] = bits
    return words.tobytes(), norm, 0.0


def dequantize(data: bytes, quant: str, dim: int, qrange: float) -> np.ndarray:
    """The float32 vector the index holds for stored ``data`` (see the module notes)."""
    if quant == "f32":
        vec = np.frombuffer(data, dtype=VECTOR_DTYPE)
    elif quant == "int8":
        vec = (np.frombuffer(data, dtype=np.int8).astype(np.float32) * np.float32(qrange)
               / np.float32(127.0))
    else:
        signs = np.unpackbits(np.frombuffer(data, dtype=np.uint8), bitorder="little")[:dim]
        vec = np.where(signs > 0, 1.0, -1.0).astype(np.float32) / np.float32(np.sqrt(dim))
    if vec.shape[0] != dim:
        raise EffectError(f"vector of {vec.shape[0]} values in a vector set of dim {dim}")
    return np.ascontiguousarray(vec, dtype=np.float32)


def stored_bytes(quant: str, dim: int) -> int:
    """Bytes of one stored vector (the effect's and VEMB RAW's ``data``)."""
    if quant == "f32":
        return 4 * dim
    if quant == "int8":
        return dim
    return 8 * ((dim + 63) // 64)


@value_type
class VectorSetValue(TypedValue, HnswGraph):
    """One vector set: ``elements`` maps name -> :class:`Element` (read them; change them
    only through effects)."""

    type_name: ClassVar[str] = "vectorset"
    effects: ClassVar[dict[type[Effect], Applier]] = {}

    #: per process, VINFO's vset-uid (derived: a copy or a restart numbers again)
    _next_uid: ClassVar[int] = 0

    def __init__(self, dim: int, quant: str = "int8", m: int = DEFAULT_M,
                 metric: str = "cosine", proj_input: int = 0,
                 ef_construction: int = DEFAULT_EF_CONSTRUCTION,
                 ef: int = DEFAULT_SEARCH_EF, family: str = "vset") -> None:
        if quant not in QUANTS:
            raise EffectError(f"unknown quantization {quant!r}")
        if metric not in METRICS:
            raise EffectError(f"unknown metric {metric!r}")
        TypedValue.__init__(self)
        HnswGraph.__init__(self, dim, "l2" if metric == "l2" else "ip", m, ef_construction, ef)
        self.quant = quant
        self.metric = metric
        self.family = family
        self.proj_input = proj_input
        self.proj: np.ndarray | None = (
            projection_matrix(proj_input, dim) if proj_input else None)
        self.elements: dict[bytes, Element] = {}
        self._by_label: list[Element | None] = []
        self.numattribs = 0
        self._sorted: list[bytes] | None = None  # names in order (VRANGE), built on need
        self._element_bytes = 0
        self.uid = VectorSetValue._next_uid
        VectorSetValue._next_uid += 1
        self.max_node_uid = 0
        self._recount()

    def __len__(self) -> int:
        # a VSIM.* index stays while empty (VSIM.DROPINDEX removes it)
        return len(self.elements) or (1 if self.family == "vsim" else 0)

    def encoding(self) -> str:
        return "hnsw"

    def settings(self) -> dict[str, Any]:
        return {"dim": self.dim, "quant": self.quant, "m": self.m, "metric": self.metric,
                "proj_input": self.proj_input, "efc": self.ef_construction, "ef": self.ef,
                "family": self.family}

    # --- reads --------------------------------------------------------------------------
    def project(self, vector: np.ndarray) -> np.ndarray:
        """An input vector as the set stores it (REDUCE's projection applied)."""
        if self.proj is None:
            return vector
        return (self.proj @ vector.astype(np.float32)).astype(np.float32)

    def query_vector(self, vector: np.ndarray) -> np.ndarray:
        """A query (already projected) as it meets the index: normalized, and binarized for
        a ``bin`` set (Redis compares bits with bits)."""
        if self.metric != "cosine":
            return vector.astype(np.float32)
        data, _norm, qrange = quantize(vector, "f32" if self.quant == "int8" else self.quant)
        return dequantize(data, "f32" if self.quant == "int8" else self.quant, self.dim, qrange)

    def indexed(self, element: Element) -> np.ndarray:
        return self.vector_of(element.label)

    def embedding(self, element: Element) -> list[float]:
        """VEMB: the dequantized vector, de-normalized (``bin``: the signs)."""
        vec = self.indexed(element).astype(np.float64)
        if self.quant == "bin":
            return np.where(vec > 0, 1.0, -1.0).tolist()
        return (vec * element.l2).astype(np.float32).astype(np.float64).tolist()

    def raw(self, element: Element) -> bytes:
        """VEMB RAW's blob: the stored form, recovered from the indexed floats."""
        vec = self.indexed(element)
        if self.quant == "f32":
            return vec.astype(VECTOR_DTYPE).tobytes()
        if self.quant == "int8":
            scale = 127.0 / element.qrange if element.qrange > 0 else 1.0
            return np.clip(np.rint(vec.astype(np.float64) * scale), -127, 127).astype(
                np.int8).tobytes()
        return quantize(vec, "bin")[0]

    def sorted_names(self) -> list[bytes]:
        if self._sorted is None:
            self._sorted = sorted(self.elements)
        return self._sorted

    def levels(self, element: Element) -> list[list[int]]:
        """VLINKS: the labels linked from ``element`` at each level, highest first."""
        index = self._index
        assert index is not None
        state = index.__getstate__()[0]
        internal = dict(zip(np.frombuffer(state["label_lookup_external"], dtype=np.uint64).tolist(),
                            np.frombuffer(state["label_lookup_internal"], dtype=np.uint32).tolist(),
                            strict=True))
        external = {v: k for k, v in internal.items()}
        row = internal[element.label]
        size0 = state["size_data_per_element"]
        level0 = np.frombuffer(state["data_level0"], dtype=np.uint8)[row * size0:]
        count0 = int(level0[:2].view(np.uint16)[0])
        links0 = level0[4:4 + 4 * count0].view(np.uint32).tolist()
        out = [[external[i] for i in links0 if i in external]]
        level = int(np.frombuffer(state["element_levels"], dtype=np.int32)[row])
        if level > 0:
            out = self._upper_links(state, row, level, external) + out
        return out

    def _upper_links(self, state: dict[str, Any], row: int, level: int,
                     external: dict[int, int]) -> list[list[int]]:
        """Links above level 0, from hnswlib's serialized ``link_lists`` (each element's
        levels as ``[count u32][links u32 * maxM]``, elements in internal order)."""
        levels = np.frombuffer(state["element_levels"], dtype=np.int32)
        per_level = 4 * (self.m + 1)
        offset = int(np.sum(levels[:row].clip(min=0))) * per_level
        blob = np.frombuffer(state["link_lists"], dtype=np.uint8)
        out: list[list[int]] = []
        for lv in range(level, 0, -1):
            start = offset + (lv - 1) * per_level
            words = blob[start:start + per_level].view(np.uint32)
            count = int(words[0] & 0xFFFF)
            out.append([external[i] for i in words[1:1 + count].tolist() if i in external])
        return out

    def distance(self, a: np.ndarray, b: np.ndarray) -> float:
        if self.space == "l2":
            diff = a - b
            return float(np.dot(diff, diff))
        return float(1.0 - np.dot(a, b))

    # --- writes (only through effects) --------------------------------------------------
    def add(self, name: bytes, data: bytes, l2: float, qrange: float,
            attr: bytes | None) -> int:
        """Add or replace ``name`` (``attr`` None keeps its attributes, b"" drops them);
        1 when it is new."""
        self.quiesce()
        vec = dequantize(data, self.quant, self.dim, qrange)
        old = self.elements.get(name)
        if old is not None:
            if attr is None:
                attr = old.attr
            self._forget(old)
        if attr == b"":
            attr = None
        label = self.new_label()
        self.add_vector(label, vec)
        element = Element(name, label, l2, qrange, attr)
        self._remember(element)
        self.max_node_uid += 1
        self._recount()
        return 0 if old is not None else 1

    def _remember(self, element: Element) -> None:
        self.elements[element.name] = element
        self._by_label[element.label] = element
        if element.attr is not None:
            self.numattribs += 1
        if self._sorted is not None and len(self._sorted) < len(self.elements):
            self._sorted = None
        self._element_bytes += len(element.name) + len(element.attr or b"") + ELEMENT_OVERHEAD

    def _forget(self, element: Element) -> None:
        del self.elements[element.name]
        if element.attr is not None:
            self.numattribs -= 1
        self._element_bytes -= len(element.name) + len(element.attr or b"") + ELEMENT_OVERHEAD
        self.free_label(element.label)

    def remove(self, names: Iterable[bytes]) -> int:
        removed = 0
        for name in names:
            element = self.elements.get(name)
            if element is None:
                continue
            self.quiesce()
            self._forget(element)
            self._sorted = None
            removed += 1
        if removed and not self.elements:
            self.reset_index()
        self._recount()
        return removed

    def set_attr(self, name: bytes, attr: bytes) -> int:
        element = self.elements.get(name)
        if element is None:
            return 0
        self.quiesce()  # a search in flight may be reading the attributes
        self._element_bytes -= len(element.attr or b"")
        if element.attr is not None:
            self.numattribs -= 1
        element.attr = attr or None
        element._parsed = _UNPARSED
        if element.attr is not None:
            self.numattribs += 1
        self._element_bytes += len(attr)
        self._recount()
        return 1

    def _recount(self) -> None:
        self.nbytes = SET_OVERHEAD + self._element_bytes + self.index_nbytes()

    # --- copies and snapshots -----------------------------------------------------------
    def copy(self) -> VectorSetValue:
        return VectorSetValue.restore(self.snapshot())

    def snapshot(self) -> dict[str, Any]:
        state = self.settings()
        index = self.index_state()
        if index is not None and self.quant != "f32":
            index = compact_index(self, index)
        state["index"] = index
        state["labels"] = len(self._by_label)
        state["free"] = list(self._free)
        state["rows"] = [element.row() for element in self.elements.values()]
        state["uid"] = self.max_node_uid
        return state

    @classmethod
    def restore(cls, state: Any) -> VectorSetValue:
        value = cls(state["dim"], state["quant"], state["m"], state["metric"],
                    state["proj_input"], state["efc"], state["ef"], state["family"])
        if "index" in state:
            index = state["index"]
            if index is not None and "qvectors" in index:
                ranges = {row[1]: row[3] for row in state["rows"]}
                index = expand_index(index, value.quant, value.dim, ranges)
            value.load_index_state(index, state["labels"], state["free"])
            for row in state["rows"]:
                value._remember(Element(*row))
            value.max_node_uid = state.get("uid", len(value.elements))
            value._recount()
        for name, data, l2, qrange, attr in state.get("add", ()):
            value.add(name, data, l2, qrange, attr)
        return value


def _level0_rows(index: dict[str, Any], width: int) -> np.ndarray:
    count = index["cur_element_count"]
    return np.frombuffer(index["data_level0"], dtype=np.uint8)[: count * width].reshape(
        count, width)


def compact_index(vset: VectorSetValue, index: dict[str, Any]) -> dict[str, Any]:
    """hnswlib's state with the float32 vectors of a Q8 or BIN set cut out of its level-0
    rows and kept in their stored form (int8 or bit words): the snapshot then holds what the
    set stores, and :func:`expand_index` puts the same floats back (no re-insertion)."""
    size, start = index["size_data_per_element"], index["offset_data"]
    rows = _level0_rows(index, size)
    width = 4 * vset.dim
    floats = np.ascontiguousarray(rows[:, start:start + width]).view("<f4")
    at = index["label_offset"]
    labels = np.ascontiguousarray(rows[:, at:at + 8]).view("<u8").reshape(-1)
    by_label = vset._by_label
    if vset.quant == "int8":
        ranges = np.asarray([e.qrange if (e := by_label[int(lb)]) is not None else 0.0
                             for lb in labels.tolist()], dtype=np.float64)
        scale = np.where(ranges > 0, 127.0 / np.where(ranges > 0, ranges, 1.0), 1.0)
        packed = np.clip(np.rint(floats * scale[:, None]), -127, 127).astype(np.int8).tobytes()
    else:
        packed = np.packbits(floats > 0, axis=1, bitorder="little").tobytes()
    out = dict(index)
    out["data_level0"] = np.delete(rows, np.s_[start:start + width], axis=1).tobytes()
    out["qvectors"] = packed
    return out


def expand_index(index: dict[str, Any], quant: str, dim: int,
                 qranges: dict[int, float]) -> dict[str, Any]:
    """:func:`compact_index`'s inverse: level-0 rows with the dequantized float32 vectors
    (``qranges``: label -> the element's Q8 range)."""
    size, start = index["size_data_per_element"], index["offset_data"]
    width = 4 * dim
    stripped = _level0_rows(index, size - width)
    count = stripped.shape[0]
    at = index["label_offset"] - width
    labels = np.ascontiguousarray(stripped[:, at:at + 8]).view("<u8").reshape(-1)
    if quant == "int8":
        q = np.frombuffer(index["qvectors"], dtype=np.int8).reshape(count, dim)
        ranges = np.asarray([qranges.get(int(lb), 0.0) for lb in labels.tolist()],
                            dtype=np.float32)
        floats = q.astype(np.float32) * ranges[:, None] / np.float32(127.0)
    else:
        bits = np.frombuffer(index["qvectors"], dtype=np.uint8).reshape(count, -1)
        signs = np.unpackbits(bits, axis=1, bitorder="little")[:, :dim]
        floats = np.where(signs > 0, 1.0, -1.0).astype(np.float32) / np.float32(np.sqrt(dim))
    rows = np.empty((count, size), dtype=np.uint8)
    rows[:, :start] = stripped[:, :start]
    rows[:, start:start + width] = np.ascontiguousarray(floats, dtype="<f4").view(
        np.uint8).reshape(count, width)
    rows[:, start + width:] = stripped[:, start:]
    out = dict(index)
    del out["qvectors"]
    out["data_level0"] = rows.tobytes()
    return out


def _apply_vadd(value: VectorSetValue, effect: KvVadd) -> int:
    return value.add(effect.element, effect.data, effect.l2, effect.qrange, effect.attr)


def _apply_vrem(value: VectorSetValue, effect: KvVrem) -> int:
    return value.remove(effect.elements)


def _apply_vsetattr(value: VectorSetValue, effect: KvVsetattr) -> int:
    return value.set_attr(effect.element, effect.attr)


VectorSetValue.effects = {KvVadd: _apply_vadd, KvVrem: _apply_vrem,
                          KvVsetattr: _apply_vsetattr}
VectorSetValue.growing = frozenset({KvVadd, KvVsetattr})
