"""Commands across the memory stores: AMEM.SCAN, and the ``# Amem`` section of INFO.

AMEM.SCAN walks one store's live ids in byte order. The cursor is ``0`` to start and at
the end; otherwise it is an opaque token (``hotkv_server.engine.cursor``) sealing the last
id the previous call looked at, and the next call goes on with the ids above it. So the
walk needs no state on the server and stays right while the store changes: every id
present for the whole walk is returned exactly once, ids added or removed meanwhile may
or may not be (as Redis SCAN promises). A token is bound to the store and the user that
got it and to this server process: anything else is refused as an invalid cursor.
COUNT (default 10) is how many ids a call looks at, MATCH filters those, so a call may
return fewer than COUNT ids, or none, before the walk ends (as Redis SCAN does). Each
call costs O(N log COUNT) over the store's N ids.

A user confined by ACL key patterns walks only the ids it may read: the others are left
out before COUNT and the cursor are decided, so neither the ids returned, nor the cursor,
nor how the walk advances depends on another tenant's ids.

Also what the memory commands (AMEM.*, EMBED.DEDUP.*) share: :class:`Options`, the loop
that reads their options by a table, and :func:`delete_one`, their DEL/DROP of one id. The
two benchmarked commands with options, AMEM.WORK.SET and AMEM.CONV.APPEND, keep a loop of
their own: a table costs a command a few calls more per option.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from hotkv_server.commands.glob import compile_glob
from hotkv_server.commands.tenancy import readable_filter
from hotkv_server.engine import errors
from hotkv_server.engine.args import Args
from hotkv_server.engine.context import Context
from hotkv_server.engine.cursor import PROCESS_CODEC
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import command
from hotkv_server.stores.base import Effect, Store

if TYPE_CHECKING:
    from hotkv_server.engine.core import Core

#: the memory stores AMEM.SCAN and INFO amem cover, in contract order
MEMORY_STORES: tuple[bytes, ...] = (b"CONV", b"SEM", b"WORK", b"EPIS", b"SUMMARY")

SCAN_COUNT_DEFAULT = 10

#: reads an option's value from ``args`` (its token already taken); ``given`` holds the
#: options read before it
OptionReader = Callable[[Args, dict[bytes, Any]], Any]


def flag(args: Args, given: dict[bytes, Any]) -> bool:
    """The reader of an option without a value: True when it is given."""
    return True


def arg(read: Callable[..., Any], *params: Any) -> OptionReader:
    """The reader of an option whose value ``read(args, *params)`` takes: an ``Args``
    method (``arg(Args.int, "COUNT", 1, None)``) or a function of the arguments."""
    return lambda args, given: read(args, *params)


class Options:
    """The options of a memory command, read by a table ``TOKEN -> reader``: any order, any
    number of times (the last value wins); ``into`` names options that fill another's value
    (METADATA fills META). An argument that is none of them is ``ERR invalid option 'x':
    expected <expected>``."""

    __slots__ = ("expected", "into", "readers")

    def __init__(self, expected: str, readers: dict[bytes, OptionReader],
                 into: dict[bytes, bytes] | None = None) -> None:
        self.expected = expected
        self.readers = readers
        self.into = into or {}

    def read(self, args: Args,
             also: Callable[[bytes, Args], bool] | None = None) -> dict[bytes, Any]:
        """Read every argument left: ``{TOKEN: value}`` of the options given. ``also``
        reads the options the table does not (``WriteOptions.take``, ``FactFilter.take``)
        and says whether it did."""
        given: dict[bytes, Any] = {}
        while args:
            raw = args.next("option")
            opt = raw.upper()
            reader = self.readers.get(opt)
            if reader is not None:
                given[self.into.get(opt, opt)] = reader(args, given)
            elif also is None or not also(opt, args):
                raise CommandError(errors.bad_argument("option", self.expected, raw))
        return given


def delete_one(ctx: Context, store: Store, ident: bytes, record: Effect) -> int:
    """DEL or DROP of one id: 0 when ``store`` does not hold ``ident``, else what the
    applier of ``record`` (which deletes it) answers, as an int (1)."""
    if not store.exists(ident, ctx.now_ms):
        return 0
    return int(ctx.emit(record))


def _scope(ctx: Context, store_name: bytes) -> bytes:
    """What a cursor is bound to: the store walked and the user walking it."""
    return store_name + b"\0" + ctx.username.encode("utf-8", "surrogateescape")


def encode_cursor(ctx: Context, store_name: bytes, last_id: bytes) -> bytes:
    return PROCESS_CODEC.seal(_scope(ctx, store_name), last_id)


def decode_cursor(ctx: Context, store_name: bytes, raw: bytes) -> bytes | None:
    """The id a cursor continues after; None for ``0`` (the start)."""
    if raw == b"0":
        return None
    last_id = PROCESS_CODEC.open(_scope(ctx, store_name), raw)
    if last_id is None:
        raise CommandError(
            errors.bad_argument("cursor", "0 or a cursor returned by AMEM.SCAN", raw)
        )
    return last_id


_SCAN_OPTIONS = Options("TYPE, MATCH or COUNT", {
    b"TYPE": arg(Args.choice, "TYPE", MEMORY_STORES),
    b"MATCH": arg(Args.next, "MATCH"),
    b"COUNT": arg(Args.int, "COUNT", 1, None),
})


@command("amem.scan", arity=-4, flags="readonly", group="amem",
         tips="nondeterministic_output request_policy:special",
         complexity="O(N log COUNT) per call with N the ids of the store.")
def amem_scan(ctx: Context, argv: list[bytes]) -> list[Any]:
    """AMEM.SCAN cursor TYPE (CONV|SEM|WORK|EPIS|SUMMARY) [MATCH glob] [COUNT n]
    Iterates the ids of one memory store (conversations, namespaces, agents ...).
    """
    given = _SCAN_OPTIONS.read(Args(argv, 2))
    store_name: bytes | None = given.get(b"TYPE")
    pattern: bytes | None = given.get(b"MATCH")
    count: int = given.get(b"COUNT", SCAN_COUNT_DEFAULT)
    if store_name is None:
        raise CommandError(
            "ERR syntax error: TYPE conv|sem|work|epis|summary is required"
        )
    after = decode_cursor(ctx, store_name, argv[1])
    ids: Iterable[bytes] = ctx.db.stores[store_name.lower().decode()].ids(ctx.now_ms)
    readable = readable_filter(ctx)
    if readable is not None:
        ids = filter(readable, ids)
    if after is not None:
        ids = (ident for ident in ids if ident > after)
    batch = heapq.nsmallest(count + 1, ids)  # one more tells whether the walk goes on
    more = len(batch) > count
    batch = batch[:count]
    cursor = encode_cursor(ctx, store_name, batch[-1]) if more else b"0"
    if pattern is not None:
        matches = compile_glob(pattern)
        batch = [ident for ident in batch if matches(ident)]
    return [cursor, batch]


def amem_info(core: Core) -> list[tuple[str, object]]:
    """The fields of INFO's ``# Amem`` section: ``<store>_<stat>`` for every memory store
    (``conv_objects``, ``conv_entries``, ``sem_vectors``, ``sem_vector_bytes`` ...)."""
    now = core.clock.now_ms()
    fields: list[tuple[str, object]] = []
    for upper in MEMORY_STORES:
        name = upper.lower().decode()
        store = core.db.stores.get(name)
        if store is None:
            continue
        for stat, value in store.stats(now).items():
            fields.append((f"{name}_{stat}", value))
    dedup = core.db.stores.get("dedup")  # EMBED.DEDUP.*
    if dedup is not None:
        fields.extend((f"dedup_{stat}", value) for stat, value in dedup.stats(now).items())
    embed = core.embed  # the embedders, their pool and cache (hotkv_server.embedding)
    if embed is not None:
        fields.extend(embed.info())
    return fields
