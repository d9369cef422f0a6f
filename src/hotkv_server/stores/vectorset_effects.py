"""The vector-set value type's effect records (``hotkv_server.stores.vectorset`` applies them
through the keyspace). A vector set (or a VSIM.* index) is created by ``KvPut(key,
"vectorset", state, None)`` whose state holds its settings and first element.

Each record carries the vector as stored (the quantized bytes: FP32, int8 or the bit
words) with its norm and quantization range, so replay and replicas index exactly the
same floats without quantizing again."""

from __future__ import annotations

from hotkv_server.stores.effect import Effect, effect


@effect("kv.vadd")
class KvVadd(Effect):
    """Add or replace ``element``: ``data`` is the stored vector (see
    ``stores/vectorset.py``), ``l2`` its norm before normalization, ``qrange`` its Q8
    range; ``attr`` None keeps the attributes, b"" removes them. Returns 1 when new."""

    key: bytes
    element: bytes
    data: bytes
    l2: float
    qrange: float
    attr: bytes | None


@effect("kv.vrem")
class KvVrem(Effect):
    """Remove ``elements`` (VREM, VSIM.DEL); returns how many existed."""

    key: bytes
    elements: list[bytes]


@effect("kv.vsetattr")
class KvVsetattr(Effect):
    """Set (b"" removes) the JSON attributes of ``element``; returns 1, or 0 when absent."""

    key: bytes
    element: bytes
    attr: bytes


RECORDS = (KvVadd, KvVrem, KvVsetattr)
