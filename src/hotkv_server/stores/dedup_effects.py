"""EMBED.DEDUP's effect records (``hotkv_server.stores.dedup`` applies them)."""

from __future__ import annotations

from hotkv_server.stores.effect import Effect, effect


@effect("dedup.put")
class DedupPut(Effect):
    """The first reference to ``ident`` stores ``model`` and ``embedding``; a later one
    only counts (the stored embedding stays)."""

    ns: bytes
    ident: bytes
    model: bytes
    embedding: bytes


@effect("dedup.release")
class DedupRelease(Effect):
    """One reference to ``ident`` less; the entry is freed at zero."""

    ns: bytes
    ident: bytes


@effect("dedup.purge")
class DedupPurge(Effect):
    """The entries of ``ns`` without a reference are freed."""

    ns: bytes


@effect("dedup.drop")
class DedupDrop(Effect):
    """``ns`` and its counters are forgotten."""

    ns: bytes


RECORDS = (DedupPut, DedupRelease, DedupPurge, DedupDrop)
