"""AMEM.SEARCH in process: the embedder hook (a namespace with a server-side embedder finds
episodic events and working notes by the query vector, without TEXT), and the ranking."""

from __future__ import annotations

from typing import Any

from hotkv_server.clients.embedding import hashed_embedding
from hotkv_server.commands import load_all
from hotkv_server.engine.clock import ManualClock
from hotkv_server.engine.context import Context
from hotkv_server.engine.core import Core
from hotkv_server.engine.dispatch import dispatch
from hotkv_server.engine.replies import ErrorReply

DIM = 32


def call(ctx: Context, *args: Any) -> Any:
    reply = dispatch(ctx, [a if isinstance(a, bytes) else str(a).encode() for a in args])
    assert not isinstance(reply, ErrorReply), reply
    return reply


def vector(text: str) -> list[str]:
    return [repr(float(x)) for x in hashed_embedding(text, DIM)]


def setup() -> Context:
    load_all()
    ctx = Context(Core(clock=ManualClock(1_700_000_000_000)))
    call(ctx, "AMEM.SEM.CREATE", "bot", DIM)
    call(ctx, "AMEM.SEM.STORE", "bot", "f1", "refunds take five days", *vector("refunds take five days"))
    call(ctx, "AMEM.EPIS.LOG", "bot", "action", "approved the refund for order 7")
    call(ctx, "AMEM.EPIS.LOG", "bot", "action", "shipped a parcel to Berlin")
    call(ctx, "AMEM.WORK.SET", "bot", "plan", "refund order 7")
    return ctx


def test_without_an_embedder_only_text_finds_events_and_notes() -> None:
    ctx = setup()
    hits = call(ctx, "AMEM.SEARCH", "bot", 10, *vector("refund"))
    assert [h["source"] for h in hits] == ["semantic"]
    hits = call(ctx, "AMEM.SEARCH", "bot", 10, *vector("refund"), "TEXT", "refund order")
    assert {(h["source"], h["similarity"]) for h in hits if h["source"] != "semantic"} == {
        ("episodic", 1.0), ("working", 1.0)}

