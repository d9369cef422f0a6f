"""AMEM.SUMMARY.*: one rolling summary text per agent, with a version every update bumps.

``IFVERSION v`` makes an update conditional (optimistic concurrency between summarizers):
with another current version (0 = no summary yet) the reply is ``CONFLICT`` and nothing
changes. ``UPTO`` records the last episodic event id the summary covers; a SET without
UPTO clears it (the new text is not known to cover anything), APPEND keeps it.

The HotKV dialect's forms are the defaults: GET answers ``[text, version, updated_unix]``
(seconds); ``GET agent RECORD`` (a hotkv extension) answers hotkv's record with the update
time in ms and ``upto``. DROP and LIST are the dialect's names; DEL stays.
"""

from __future__ import annotations

from typing import Any

from hotkv_server.commands.amem import Options, arg, delete_one
from hotkv_server.commands.epis import parse_event_id
from hotkv_server.commands.tenancy import readable_ids
from hotkv_server.engine import errors
from hotkv_server.engine.args import Args
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import SpecFields, family
from hotkv_server.stores.summary import SummaryStore
from hotkv_server.stores.summary_effects import SummaryAppend, SummaryDel, SummarySet

command = family(group="summary")


def _check_version(store: SummaryStore, agent: bytes, expected: int | None) -> int:
    """The current version (0 = none), after checking it against IFVERSION if given."""
    current = store.version(agent)
    if expected is not None and expected != current:
        raise CommandError(errors.summary_conflict(agent, current))
    return current


def _upto(args: Args, given: dict[bytes, Any]) -> bytes:
    upto = args.next("UPTO")
    if parse_event_id(upto) is None:
        raise CommandError(errors.bad_argument("UPTO", "an event id <ms>-<seq>", upto))
    return upto


_IFVERSION = arg(Args.int, "IFVERSION", 0, None)
_SET_OPTIONS = Options("IFVERSION or UPTO", {b"IFVERSION": _IFVERSION, b"UPTO": _upto})
_APPEND_OPTIONS = Options("IFVERSION", {b"IFVERSION": _IFVERSION})


@command("amem.summary.set", arity=-3, flags="write denyoom", key="RW update", dialect=True,
         extensions="IFVERSION UPTO")
def summary_set(ctx: Context, argv: list[bytes]) -> int:
    """AMEM.SUMMARY.SET agent text [IFVERSION v] [UPTO event-id]
    Replaces an agent's summary and returns its new version.
    """
    args = Args(argv, 1)
    agent = args.ident("agent")
    text = args.text("text")
    given = _SET_OPTIONS.read(args)
    version = _check_version(ctx.db.summary, agent, given.get(b"IFVERSION")) + 1
    ctx.emit(SummarySet(agent, text, version, ctx.now_ms, given.get(b"UPTO")))
    return version


@command("amem.summary.append", arity=-3, flags="write denyoom", key="RW update",
         complexity="O(N) with N the summary's length", dialect=True, extensions="IFVERSION")
def summary_append(ctx: Context, argv: list[bytes]) -> int:
    """AMEM.SUMMARY.APPEND agent line [IFVERSION v]
    Adds a line to an agent's summary and returns its new version.
    """
    args = Args(argv, 1)
    agent = args.ident("agent")
    line = args.text("line")
    expected = _APPEND_OPTIONS.read(args).get(b"IFVERSION")
    version = _check_version(ctx.db.summary, agent, expected) + 1
    ctx.emit(SummaryAppend(agent, line, version, ctx.now_ms))
    return version


@command("amem.summary.get", arity=-2, flags="readonly fast", key="RO access", dialect=True,
         extensions="RECORD")
def summary_get(ctx: Context, argv: list[bytes]) -> Any:
    """AMEM.SUMMARY.GET agent [RECORD]
    Returns an agent's summary as [text, version, updated_unix], or with RECORD its record: text,
    version, updated (ms) and upto; null without one.
    """
    args = Args(argv, 1)
    agent = args.ident("agent")
    as_record = args.only_flag(b"RECORD")
    store = ctx.db.summary
    item = store.get(agent)
    if item is None:
        return None
    if not as_record:
        return [item.text, item.version, item.updated // 1000]
    record: dict[str, Any] = {"text": item.text, "version": item.version, "updated": item.updated}
    if item.upto is not None:
        record["upto"] = item.upto
    return record


#: what DEL and DROP share
_SUMMARY_DEL = SpecFields(arity=2, flags="write", key="RM delete")


@command("amem.summary.del", _SUMMARY_DEL)
def summary_del(ctx: Context, argv: list[bytes]) -> int:
    """AMEM.SUMMARY.DEL agent
    Deletes an agent's summary.
    """
    agent = Args(argv, 1).ident("agent")
    return delete_one(ctx, ctx.db.summary, agent, SummaryDel(agent))


@command("amem.summary.drop", _SUMMARY_DEL, dialect=True)
def summary_drop(ctx: Context, argv: list[bytes]) -> int:
    """AMEM.SUMMARY.DROP agent
    Deletes an agent's summary; 1 if it existed, else 0.
    """
    return summary_del(ctx, argv)


@command("amem.summary.list", arity=1, flags="readonly",
         complexity="O(N log N) with N the agents with a summary", dialect=True)
def summary_list(ctx: Context, argv: list[bytes]) -> list[bytes]:
    """AMEM.SUMMARY.LIST
    Returns the agents that have a summary, in byte order (only those a user restricted by ACL key
    patterns may read).
    """
    store = ctx.db.summary
    # a tenant confined by key patterns learns no other tenant's agent ids
    return readable_ids(ctx, sorted(store.ids(ctx.now_ms)))
