"""EMBED.DEDUP's effect records (``hotkv_server.stores.dedup`` applies them)."""

from __future__ import annotations

from typing import ClassVar

from hotkv_server.stores.effect import Effect, declare


class DedupPut(Effect):
    """The first reference to ``ident`` stores ``model`` and ``embedding``; a later one
    only counts (the stored embedding stays)."""

    op: ClassVar[str] = "dedup.put"

    def __init__(self, ns: bytes, ident: bytes, model: bytes, embedding: bytes) -> None:
        self.ns, self.ident, self.model, self.embedding = ns, ident, model, embedding


class DedupRelease(Effect):
    """One reference to ``ident`` less; the entry is freed at zero."""

    op: ClassVar[str] = "dedup.release"

    def __init__(self, ns: bytes, ident: bytes) -> None:
        self.ns, self.ident = ns, ident


class DedupPurge(Effect):
    """The entries of ``ns`` without a reference are freed."""

    op: ClassVar[str] = "dedup.purge"

    def __init__(self, ns: bytes) -> None:
        self.ns = ns


class DedupDrop(Effect):
    """``ns`` and its counters are forgotten."""

    op: ClassVar[str] = "dedup.drop"

    def __init__(self, ns: bytes) -> None:
        self.ns = ns


RECORDS = declare(DedupPut, DedupRelease, DedupPurge, DedupDrop)
