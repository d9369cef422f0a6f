"""AMEM.EPIS.*: the append-only, time-stamped event log per agent.

Event ids are ``<ms>-<seq>`` (as Redis stream ids); a range bound is a ms timestamp, an
event id, ``-`` or ``+``, both ends inclusive. A bare timestamp as FROM means ``ms-0`` and
as TO ``ms-<max seq>``, as XRANGE reads them. BEFORE of TRIM takes the same bounds and
removes every event strictly below it.

The HotKV dialect's forms are the defaults: LOG answers ``+OK`` (``WITHID``, a hotkv
extension, answers the event id) and takes its metadata as ``METADATA``: any text, kept as
it is (hotkv's ``META`` takes only a JSON object; both fill the record's ``meta``; the
official hotkv-mcp can only send text that is not JSON, its SDK decodes JSON arguments into
objects its ``metadata: str`` refuses); an event's record carries ``timestamp`` (ms); CLEAR removes every
event and keeps the log (its ids go on increasing), DEL forgets the log; STATS counts.
"""

from __future__ import annotations

import re
from typing import Any

from hotkv_server.commands.amem import Options, arg, delete_one, flag
from hotkv_server.engine import errors
from hotkv_server.engine.args import Args, parse_int
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import family
from hotkv_server.engine.replies import OK
from hotkv_server.stores.epis import (
    MAX_KEY,
    MIN_KEY,
    SEQ_MASK,
    Event,
    event_key,
    format_id,
)
from hotkv_server.stores.epis_effects import EpisDel, EpisLog, EpisTrim

command = family(group="epis")

LIMIT_DEFAULT = 100
LIMIT_MAX = 10_000

_TYPE_RE = re.compile(rb"[a-z0-9_.-]{1,64}")
_BOUND_EXPECTED = "a ms timestamp, an event id <ms>-<seq>, - or +"


def check_type(raw: bytes, name: str = "type") -> bytes:
    """An event type token: 1..64 bytes of ``[a-z0-9_.-]``."""
    if _TYPE_RE.fullmatch(raw) is None:
        raise CommandError(errors.bad_argument(name, "1..64 bytes of [a-z0-9_.-]", raw))
    return raw


def parse_event_id(raw: bytes) -> tuple[int, int] | None:
    """``b"1700000000000-3"`` -> ``(1700000000000, 3)``; None if it is not a full event id."""
    ms_part, dash, seq_part = raw.partition(b"-")
    if not dash:
        return None
    ms = parse_int(ms_part)
    seq = parse_int(seq_part)
    if ms is None or seq is None or ms < 0 or seq < 0:
        return None
    return ms, seq


def parse_bound(raw: bytes, name: str, *, end: bool) -> int:
    """A range bound as an id key: ``-``, ``+``, ``ms`` (``ms-0``, or ``ms-max`` as an end)
    or ``ms-seq``."""
    if raw == b"-":
        return MIN_KEY
    if raw == b"+":
        return MAX_KEY
    ms = parse_int(raw)
    if ms is not None and ms >= 0:
        return event_key(ms, SEQ_MASK) if end else event_key(ms, 0)
    parts = parse_event_id(raw)
    if parts is None:
        raise CommandError(errors.bad_argument(name, _BOUND_EXPECTED, raw))
    return event_key(*parts)


def event_record(event: Event) -> dict[str, Any]:
    """The reply record of one event: id, timestamp, type, text, source, meta (absent ones
    left out)."""
    ms, seq, type_, text, source, meta = event
    record: dict[str, Any] = {"id": format_id(ms, seq), "timestamp": ms, "type": type_,
                              "text": text}
    if source is not None:
        record["source"] = source
    if meta is not None:
        record["meta"] = meta
    return record


def _bound(args: Args, name: str, end: bool) -> int:
    return parse_bound(args.next(name), name, end=end)


_LOG_OPTIONS = Options("METADATA, META, SOURCE or WITHID", {
    b"META": arg(Args.json_object, "META"),
    b"METADATA": arg(Args.text, "METADATA"),
    b"SOURCE": arg(Args.text, "SOURCE"),
    b"WITHID": flag,
}, into={b"METADATA": b"META"})  # either fills the record's meta, the last one given wins
_QUERY_OPTIONS = Options("TYPE, FROM, TO, LIMIT or REV", {
    b"TYPE": lambda args, given: check_type(args.next("TYPE"), "TYPE"),
    b"FROM": arg(_bound, "FROM", False),
    b"TO": arg(_bound, "TO", True),
    b"LIMIT": arg(Args.int, "LIMIT", 1, LIMIT_MAX),
    b"REV": flag,
})


@command("amem.epis.log", arity=-4, flags="write denyoom", key="RW insert",
         tips="nondeterministic_output", complexity="O(1)", dialect=True,
         extensions="META SOURCE WITHID")
def epis_log(ctx: Context, argv: list[bytes]) -> Any:
    """AMEM.EPIS.LOG agent type text [METADATA text|META json-object] [SOURCE s] [WITHID]
    Appends an event to an agent's episodic log: OK, or with WITHID its id.
    """
    agent = Args(argv, 1).ident("agent")
    type_ = check_type(argv[2])
    text = argv[3]
    given = _LOG_OPTIONS.read(Args(argv, 4))
    ms, seq = ctx.db.epis.next_id(agent, ctx.now_ms)
    ctx.emit(EpisLog(agent, ms, seq, type_, text, given.get(b"SOURCE"), given.get(b"META")))
    return format_id(ms, seq) if b"WITHID" in given else OK


@command("amem.epis.query", arity=-2, flags="readonly", key="RO access",
         complexity="O(log N + M) with M the events walked (all of the range with a TYPE filter).",
         dialect=True, extensions="REV")
def epis_query(ctx: Context, argv: list[bytes]) -> list[dict[str, Any]]:
    """AMEM.EPIS.QUERY agent [TYPE type] [FROM start] [TO end] [LIMIT n] [REV]
    Returns an agent's events by type and id/time range, oldest or newest first.
    """
    args = Args(argv, 1)
    agent = args.ident("agent")
    given = _QUERY_OPTIONS.read(args)
    events = ctx.db.epis.query(agent, given.get(b"FROM", MIN_KEY), given.get(b"TO", MAX_KEY),
                               given.get(b"TYPE"), given.get(b"LIMIT", LIMIT_DEFAULT),
                               b"REV" in given)
    return [event_record(event) for event in events]


@command("amem.epis.len", arity=2, flags="readonly fast", key="RO")
def epis_len(ctx: Context, argv: list[bytes]) -> int:
    """AMEM.EPIS.LEN agent
    Returns the number of events in an agent's episodic log.
    """
    agent = Args(argv, 1).ident("agent")
    store = ctx.db.epis
    return store.length(agent)


@command("amem.epis.trim", arity=4, flags="write", key="RW delete",
         complexity="O(N) with N the events left")
def epis_trim(ctx: Context, argv: list[bytes]) -> int:
    """AMEM.EPIS.TRIM agent (MAXLEN n|BEFORE start)
    Removes an agent's oldest events, to a maximum length or before an id/time.
    """
    args = Args(argv, 1)
    agent = args.ident("agent")
    mode = args.choice("trim mode", (b"MAXLEN", b"BEFORE"))
    store = ctx.db.epis
    if mode == b"MAXLEN":
        boundary = store.trim_boundary_maxlen(agent, args.int("MAXLEN", 0, None))
    else:
        start = parse_bound(args.next("BEFORE"), "BEFORE", end=False)
        boundary = store.trim_boundary_before(agent, start)
    return _trim(ctx, agent, boundary)


def _trim(ctx: Context, agent: bytes, boundary: tuple[int, int] | None) -> int:
    """TRIM and CLEAR: remove the events below ``boundary``; how many went."""
    if boundary is None:
        return 0
    return int(ctx.emit(EpisTrim(agent, boundary[0], boundary[1])))


@command("amem.epis.del", arity=2, flags="write", key="RM delete")
def epis_del(ctx: Context, argv: list[bytes]) -> int:
    """AMEM.EPIS.DEL agent
    Deletes an agent's whole episodic log.
    """
    agent = Args(argv, 1).ident("agent")
    return delete_one(ctx, ctx.db.epis, agent, EpisDel(agent))


@command("amem.epis.clear", arity=2, flags="write", key="RW delete",
         complexity="O(N) with N the events held", dialect=True)
def epis_clear(ctx: Context, argv: list[bytes]) -> int:
    """AMEM.EPIS.CLEAR agent
    Removes every event of an agent's log, keeping the log; 1 if events went, else 0.
    """
    agent = Args(argv, 1).ident("agent")
    removed = _trim(ctx, agent, ctx.db.epis.trim_boundary_maxlen(agent, 0))
    return 1 if removed else 0


@command("amem.epis.stats", arity=2, flags="readonly fast", key="RO", dialect=True)
def epis_stats(ctx: Context, argv: list[bytes]) -> dict[str, Any]:
    """AMEM.EPIS.STATS agent
    Returns total_events, oldest_ts and newest_ts (ms; null without events) of a log.
    """
    agent = Args(argv, 1).ident("agent")
    store = ctx.db.epis
    oldest = store.query(agent, limit=1)
    newest = store.query(agent, limit=1, rev=True)
    return {
        "total_events": store.length(agent),
        "oldest_ts": oldest[0][0] if oldest else None,
        "newest_ts": newest[0][0] if newest else None,
    }
