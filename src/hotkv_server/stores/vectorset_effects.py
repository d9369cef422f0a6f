"""The vector-set value type's effect records (``hotkv_server.stores.vectorset`` applies them
through the keyspace). A vector set (or a VSIM.* index) is created by ``KvPut(key,
"vectorset", state, None)`` whose state holds its settings and first element.

Each record carries the vector as stored (the quantized bytes: FP32, int8 or the bit
words) with its norm and quantization range, so replay and replicas index exactly the
same floats without quantizing again."""

from __future__ import annotations

from typing import ClassVar

from hotkv_server.stores.effect import Effect, declare


class KvVadd(Effect):
    """Add or replace ``element``: ``data`` is the stored vector (see
    ``stores/vectorset.py``), ``l2`` its norm before normalization, ``qrange`` its Q8
    range; ``attr`` None keeps the attributes, b"" removes them. Returns 1 when new."""

    op: ClassVar[str] = "kv.vadd"

    def __init__(self, key: bytes, element: bytes, data: bytes, l2: float, qrange: float,
                 attr: bytes | None) -> None:
        self.key, self.element, self.data, self.l2, self.qrange, self.attr = (
            key, element, data, l2, qrange, attr)


class KvVrem(Effect):
    """Remove ``elements`` (VREM, VSIM.DEL); returns how many existed."""

    op: ClassVar[str] = "kv.vrem"

    def __init__(self, key: bytes, elements: list[bytes]) -> None:
        self.key, self.elements = key, elements


class KvVsetattr(Effect):
    """Set (b"" removes) the JSON attributes of ``element``; returns 1, or 0 when absent."""

    op: ClassVar[str] = "kv.vsetattr"

    def __init__(self, key: bytes, element: bytes, attr: bytes) -> None:
        self.key, self.element, self.attr = key, element, attr


RECORDS = declare(KvVadd, KvVrem, KvVsetattr)
