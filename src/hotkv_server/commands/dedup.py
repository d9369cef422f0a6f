"""EMBED.DEDUP.*: the explicit embedding cache, keyed by content hash (stores/dedup.py).

The wire form is the one hotkv-client 1.0.0's ``embed_dedup_*`` methods send:
``PUT ns hash model embedding`` (1 stored, 0 one more reference to a stored one),
``GET ns hash`` (the embedding or null), ``RELEASE ns hash`` (1 if it was held; freed at
zero references), ``STATS ns`` (``hits``, ``misses``, ``entries``, ``references``,
``bytes``), ``DROP ns`` (1 if the namespace existed), ``PURGE ns`` (frees expired and
unreferenced entries: there are none, as an entry is freed at its last RELEASE and
entries never expire; 1 if the namespace exists), ``LIST`` (the namespace names, sorted; a user confined
by ACL key patterns sees only the names it may read). The embedding is opaque bytes
(FP32 or whatever the client's model produces), stored as sent. Every write is an effect.
"""

from __future__ import annotations

from hotkv_server.commands.amem import delete_one
from hotkv_server.commands.tenancy import readable_ids
from hotkv_server.engine.args import Args
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import family
from hotkv_server.stores.dedup_effects import DedupDrop, DedupPurge, DedupPut, DedupRelease

command = family(group="embed")


def _entry(argv: list[bytes]) -> tuple[bytes, bytes]:
    """The ``ns hash`` an entry's commands (PUT, GET, RELEASE) start with."""
    args = Args(argv, 1)
    return args.ident("ns"), args.ident("hash")


@command("embed.dedup.put", arity=5, flags="write denyoom", key="RW update")
def dedup_put(ctx: Context, argv: list[bytes]) -> int:
    """EMBED.DEDUP.PUT ns hash model embedding
    Stores an embedding under a content hash, or takes one more reference to the stored one; 1 if
    newly stored, else 0.
    """
    ns, ident = _entry(argv)
    args = Args(argv, 3)
    model = args.ident("model")
    embedding = args.next("embedding")
    if not embedding:
        raise CommandError("ERR invalid embedding '': expected the embedding's bytes")
    result: int = ctx.emit(DedupPut(ns, ident, model, embedding))
    return result


@command("embed.dedup.get", arity=3, flags="readonly fast", key="RO access")
def dedup_get(ctx: Context, argv: list[bytes]) -> bytes | None:
    """EMBED.DEDUP.GET ns hash
    Returns the embedding stored under a content hash, or null (counted as a hit or a miss).
    """
    ns, ident = _entry(argv)
    entry = ctx.db.dedup.lookup(ns, ident)
    return None if entry is None else entry.embedding


@command("embed.dedup.release", arity=3, flags="write", key="RW update")
def dedup_release(ctx: Context, argv: list[bytes]) -> int:
    """EMBED.DEDUP.RELEASE ns hash
    Gives back one reference to a stored embedding (freed at zero); 1 if it was held, else 0.
    """
    ns, ident = _entry(argv)
    space = ctx.db.dedup.get(ns)
    if space is None or ident not in space.entries:
        return 0
    ctx.emit(DedupRelease(ns, ident))
    return 1


@command("embed.dedup.stats", arity=2, flags="readonly fast", key="RO access")
def dedup_stats(ctx: Context, argv: list[bytes]) -> dict[str, int]:
    """EMBED.DEDUP.STATS ns
    Returns a dedup namespace's hits, misses, entries, references and bytes (zeros for a namespace
    that does not exist).
    """
    space = ctx.db.dedup.get(Args(argv, 1).ident("ns"))
    if space is None:
        return {"hits": 0, "misses": 0, "entries": 0, "references": 0, "bytes": 0}
    return space.stats()


@command("embed.dedup.drop", arity=2, flags="write", key="RM delete",
         complexity="O(N) with N the entries held")
def dedup_drop(ctx: Context, argv: list[bytes]) -> int:
    """EMBED.DEDUP.DROP ns
    Drops a dedup namespace with its entries and counters; 1 if it existed, else 0.
    """
    ns = Args(argv, 1).ident("ns")
    return delete_one(ctx, ctx.db.dedup, ns, DedupDrop(ns))


@command("embed.dedup.purge", arity=2, flags="write", key="RW update")
def dedup_purge(ctx: Context, argv: list[bytes]) -> int:
    """EMBED.DEDUP.PURGE ns
    Frees the expired and unreferenced entries of a dedup namespace (hotkv frees an entry at its
    last RELEASE and entries never expire, so none are left); 1 if the namespace exists, else 0.
    """
    ns = Args(argv, 1).ident("ns")
    space = ctx.db.dedup.get(ns)
    if space is None:
        return 0
    if any(entry.refs <= 0 for entry in space.entries.values()):  # none by construction
        ctx.emit(DedupPurge(ns))
    return 1


@command("embed.dedup.list", arity=1, flags="readonly",
         complexity="O(N log N) with N the namespaces")
def dedup_list(ctx: Context, argv: list[bytes]) -> list[bytes]:
    """EMBED.DEDUP.LIST
    Lists the dedup namespaces, sorted.
    """
    return readable_ids(ctx, sorted(ctx.db.dedup.namespaces))
