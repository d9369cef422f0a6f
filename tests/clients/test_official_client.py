"""The official HotKV client (hotkv-client 1.0.0, module ``hotkv``) against a real hotkv server.

Every agent-memory method of its ``AIMemoryCommands`` (AMEM.* and AMEM.SUMMARY.*) runs in
RESP3 (the client's default) and RESP2 (``resp3=False``) and returns what its docstring and
type promise; the product documentation's agent turn runs verbatim; the asyncio client and a
pipeline (MULTI/EXEC and plain) give the same results. The package is installed by the
test extra (pyproject.toml); nothing here imitates it.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Iterator
from typing import Any

import hotkv
import hotkv.asyncio
import pytest
from hotkv.commands.ai_memory import AIMemoryCommands

from helpers import HotkvProcess
from hotkv_server.clients.embedding import hashed_embedding

DIM = 16


def embed(text: str) -> list[float]:
    return [float(x) for x in hashed_embedding(text, DIM)]


@pytest.fixture(params=[True, False], ids=["resp3", "resp2"])
def r(request: pytest.FixtureRequest, server: HotkvProcess) -> Iterator[hotkv.HotKV]:
    client = hotkv.from_url(f"hotkv://127.0.0.1:{server.port}", resp3=request.param)
    client.execute_command("FLUSHALL")
    try:
        yield client
    finally:
        client.close()


def now_ms() -> int:
    return int(time.time() * 1000)


#: every AMEM method of AIMemoryCommands and the test that calls it (checked below)
COVERED = {
    "amem_conv_create": "test_conversation", "amem_conv_append": "test_conversation",
    "amem_conv_get": "test_conversation", "amem_conv_window": "test_conversation",
    "amem_conv_clear": "test_conversation", "amem_conv_drop": "test_conversation",
    "amem_sem_create": "test_semantic", "amem_sem_store": "test_semantic",
    "amem_sem_recall": "test_semantic", "amem_sem_forget": "test_semantic",
    "amem_sem_list": "test_semantic",
    "amem_work_set": "test_working", "amem_work_get": "test_working",
    "amem_work_del": "test_working", "amem_work_clear": "test_working",
    "amem_work_list": "test_working",
    "amem_epis_log": "test_episodic", "amem_epis_query": "test_episodic",
    "amem_epis_clear": "test_episodic", "amem_epis_stats": "test_episodic",
    "amem_search": "test_search",
    "amem_summary_set": "test_summary", "amem_summary_append": "test_summary",
    "amem_summary_get": "test_summary", "amem_summary_drop": "test_summary",
    "amem_summary_list": "test_summary",
}


def test_every_agent_memory_method_is_covered() -> None:
    methods = {name for name, _ in inspect.getmembers(AIMemoryCommands, inspect.isfunction)
               if name.startswith("amem_")}
    assert methods == set(COVERED)
    source = inspect.getsource(inspect.getmodule(test_every_agent_memory_method_is_covered))
    for method, test in COVERED.items():
        body = source[source.index(f"def {test}("):]
        body = body[: body.index("\ndef ", 1)] if "\ndef " in body[1:] else body
        assert f".{method}(" in body, f"{test} does not call {method}"


def test_agent_turn_of_the_product_documentation(r: hotkv.HotKV) -> None:
    """The agent turn of hotkv-client's documentation, call for call."""
    session, agent, question = "session-42", "agent-support", "How do I fix the VAT number?"
    r.amem_sem_create("support-kb", DIM)
    r.amem_sem_store("support-kb", "vat-policy", "How do I fix the VAT number? Within 30 days.",
                     embed("How do I fix the VAT number? Within 30 days."))
    r.amem_sem_store("support-kb", "shipping", "Parcels ship on Mondays.",
                     embed("Parcels ship on Mondays."))
    r.amem_work_set(session, "ticket", "INV-1932")

    assert r.amem_conv_create(session, window=50, ttl=86400) is True
    assert r.amem_conv_append(session, "user", question) is True
    turns = r.amem_conv_window(session, 10)
    facts = [f for f in r.amem_sem_recall("support-kb", 3, embed(question))
             if f["similarity"] > 0.5]
    ticket = r.amem_work_get(session, "ticket")
    assert r.amem_epis_log(agent, "action", f"answered {ticket!r} with {len(facts)} facts") is True
    assert r.amem_work_set(session, "last_step", "answered") is True

    assert [(t["role"], t["content"]) for t in turns] == [(b"user", question.encode())]
    assert [f["id"] for f in facts] == [b"vat-policy"]
    assert isinstance(facts[0]["similarity"], float) and 0.5 < facts[0]["similarity"] <= 1.0
    assert ticket == b"INV-1932"
    assert r.amem_work_get(session, "last_step") == b"answered"
    assert [e["type"] for e in r.amem_epis_query(agent)] == [b"action"]


def test_conversation(r: hotkv.HotKV) -> None:
    assert r.amem_conv_create("s1", window=3) is True
    for i in range(4):
        assert r.amem_conv_append("s1", "user" if i % 2 == 0 else "assistant", f"m{i}") is True
    turns = r.amem_conv_get("s1")
    assert [t["content"] for t in turns] == [b"m1", b"m2", b"m3"]  # the window keeps 3
    assert [t["role"] for t in turns] == [b"assistant", b"user", b"assistant"]
    assert r.amem_conv_window("s1", 2) == turns[1:]
    assert r.amem_conv_clear("s1") is True
    assert r.amem_conv_get("s1") == []
    assert r.amem_conv_clear("s1") is False  # nothing went
    assert r.amem_conv_append("s1", "user", "after clear") is True  # the session stayed
    assert r.amem_conv_drop("s1") is True
    assert r.amem_conv_drop("s1") is False
    with pytest.raises(hotkv.ResponseError) as missing:
        r.amem_conv_append("s1", "user", "x")
    assert "session not found" in str(missing.value).lower()
    assert missing.value.code == "NOTFOUND"
    # TTL is seconds, PXAT an absolute end in ms; not both (the client refuses that itself)
    assert r.amem_conv_create("t1", ttl=100) is True
    assert r.amem_conv_create("t2", pxat=now_ms() + 60_000) is True
    ttl = _record(r.execute_command("AMEM.CONV.INFO", "t2"))[b"ttl"]
    assert 50_000 < ttl <= 60_000
    assert r.amem_conv_append("t2", "user", "x") is True  # a PXAT end does not move
    assert r.amem_conv_create("gone", pxat=now_ms() - 1) is True  # already over
    assert r.amem_conv_get("gone") == []
    with pytest.raises(hotkv.DataError):
        r.amem_conv_create("t3", ttl=1, pxat=now_ms())


def test_semantic(r: hotkv.HotKV) -> None:
    assert r.amem_sem_create("kb", 3) is True
    assert r.amem_sem_store("kb", "a", "alpha", [1.0, 0.0, 0.0]) is True
    assert r.amem_sem_store("kb", "b", "beta", [0.0, 1.0, 0.0], ttl=100) is True
    assert r.amem_sem_store("kb", "c", "gamma", [0.9, 0.1, 0.0], pxat=now_ms() + 60_000) is True
    assert r.amem_sem_store("kb", "a", "alpha again", [1.0, 0.0, 0.0]) is True  # replace
    assert r.amem_sem_store("kb", "old", "gone", [0.0, 0.0, 1.0], pxat=now_ms() - 1) is True
    hits = r.amem_sem_recall("kb", 2, [1.0, 0.0, 0.0])
    assert [h["id"] for h in hits] == [b"a", b"c"]
    assert hits[0]["text"] == b"alpha again"
    assert all(isinstance(h["similarity"], float) for h in hits)
    assert hits[0]["similarity"] >= hits[1]["similarity"]
    assert sorted(r.amem_sem_list("kb")) == [b"a", b"b", b"c"]
    assert r.amem_sem_forget("kb", "b") is True
    assert r.amem_sem_forget("kb", "b") is False
    assert sorted(r.amem_sem_list("kb")) == [b"a", b"c"]
    assert r.amem_sem_create("empty", 3) is True
    assert r.amem_sem_recall("empty", 3, [1.0, 0.0, 0.0]) == []
    assert r.amem_sem_list("empty") == []


def test_working(r: hotkv.HotKV) -> None:
    assert r.amem_work_set("s1", "plan", "step 1") is True  # no session to create first
    assert r.amem_work_set("s1", "ticket", "INV-7", ttl=100) is True
    assert r.amem_work_set("s1", "until", "x", pxat=now_ms() + 60_000) is True
    assert r.amem_work_set("s1", "over", "x", pxat=now_ms() - 1) is True
    assert r.amem_work_get("s1", "plan") == b"step 1"
    assert r.amem_work_get("s1", "over") is None
    assert r.amem_work_get("s1", "nope") is None
    assert sorted(r.amem_work_list("s1")) == [b"plan", b"ticket", b"until"]
    assert r.amem_work_del("s1", "plan") is True
    assert r.amem_work_del("s1", "plan") is False
    assert r.amem_work_clear("s1") is True
    assert r.amem_work_clear("s1") is False
    assert r.amem_work_list("s1") == []


def test_episodic(r: hotkv.HotKV) -> None:
    before = now_ms()
    assert r.amem_epis_log("bot", "decision", "use tool X") is True
    assert r.amem_epis_log("bot", "action", "ran tool X", metadata='{"tool": "X"}') is True
    assert r.amem_epis_log("bot", "observation", "it worked") is True
    events = r.amem_epis_query("bot")
    assert [e["type"] for e in events] == [b"decision", b"action", b"observation"]
    assert all(isinstance(e["timestamp"], int) and before <= e["timestamp"] <= now_ms()
               for e in events)
    assert events[1]["meta"] == b'{"tool": "X"}'
    assert [e["text"] for e in r.amem_epis_query("bot", type="action")] == [b"ran tool X"]
    assert len(r.amem_epis_query("bot", limit=2)) == 2
    first, last = events[0]["timestamp"], events[-1]["timestamp"]
    assert len(r.amem_epis_query("bot", from_ts=first, to_ts=last)) == 3
    assert r.amem_epis_query("bot", from_ts=last + 1) == []
    stats = r.amem_epis_stats("bot")
    assert stats == {"total_events": 3, "oldest_ts": first, "newest_ts": last}
    assert r.amem_epis_clear("bot") is True
    assert r.amem_epis_clear("bot") is False
    assert r.amem_epis_query("bot") == []
    assert r.amem_epis_stats("bot") == {"total_events": 0, "oldest_ts": None, "newest_ts": None}
    assert r.amem_epis_stats("never") == {"total_events": 0, "oldest_ts": None, "newest_ts": None}


def test_search(r: hotkv.HotKV) -> None:
    r.amem_sem_create("agent-7", 3)
    r.amem_sem_store("agent-7", "near", "the invoice VAT policy", [1.0, 0.0, 0.0])
    r.amem_sem_store("agent-7", "far", "shipping days", [0.0, 1.0, 0.0])
    r.amem_epis_log("agent-7", "action", "fixed the VAT number on invoice INV-1932")
    r.amem_work_set("agent-7", "ticket", "INV-1932 VAT")
    hits = r.amem_search("agent-7", 5, [1.0, 0.0, 0.0])
    # the dialect sends only a vector: semantic hits, ranked, each with a float similarity
    assert [(h["source"], h["id"]) for h in hits] == [(b"semantic", b"near"), (b"semantic", b"far")]
    assert hits[0]["similarity"] > hits[1]["similarity"]
    assert all(isinstance(h["similarity"], float) for h in hits)
    # hotkv's TEXT option adds episodic and working hits by text match (the client's own
    # AMEM.SEARCH callback decodes the reply)
    mixed = r.execute_command("AMEM.SEARCH", "agent-7", 5, 1, 0, 0, "TEXT", "VAT invoice")
    assert [(h["source"], h["id"]) for h in mixed][:1] == [(b"semantic", b"near")]
    by_source = {h["source"]: h for h in mixed}
    assert set(by_source) == {b"semantic", b"episodic", b"working"}
    assert by_source[b"episodic"]["similarity"] == 1.0  # both terms found
    assert by_source[b"working"]["id"] == b"ticket"
    assert by_source[b"working"]["similarity"] == 0.5  # "VAT" only
    assert r.amem_search("nobody", 3, [1.0, 0.0, 0.0]) == []


def test_summary(r: hotkv.HotKV) -> None:
    before = int(time.time())
    assert r.amem_summary_get("bot") is None
    assert r.amem_summary_set("bot", "User wants a refund.") == 1
    assert r.amem_summary_append("bot", "Refund approved.") == 2
    text, version, updated = r.amem_summary_get("bot")
    assert text == b"User wants a refund.\nRefund approved."
    assert version == 2
    assert before <= updated <= int(time.time()) + 1  # unix seconds, not ms
    assert r.amem_summary_set("other", "x") == 1
    assert r.amem_summary_list() == [b"bot", b"other"]
    assert r.amem_summary_drop("bot") is True
    assert r.amem_summary_drop("bot") is False
    assert r.amem_summary_list() == [b"other"]


def test_pipeline(r: hotkv.HotKV) -> None:
    r.amem_sem_create("kb", 2)
    for transaction in (True, False):
        r.amem_conv_drop("p1")
        pipe = r.pipeline(transaction=transaction)
        pipe.amem_conv_create("p1", window=10)
        pipe.amem_conv_append("p1", "user", "hi")
        pipe.amem_conv_get("p1")
        pipe.amem_sem_store("kb", "f", "fact", [1.0, 0.0])
        pipe.amem_sem_recall("kb", 1, [1.0, 0.0])
        pipe.amem_work_set("p1", "k", "v")
        pipe.amem_epis_log("p1", "action", "a")
        pipe.amem_epis_stats("p1")
        pipe.amem_summary_set("p1", "s")
        pipe.amem_summary_get("p1")
        results = pipe.execute()
        assert results[:2] == [True, True]
        assert [t["content"] for t in results[2]] == [b"hi"]
        assert results[3] is True
        assert results[4][0]["id"] == b"f" and isinstance(results[4][0]["similarity"], float)
        assert results[5:7] == [True, True]
        assert results[7]["total_events"] >= 1
        assert isinstance(results[8], int)
        assert results[9][0] == b"s"


def test_asyncio_client(server: HotkvProcess) -> None:
    async def main(resp3: bool) -> None:
        client = hotkv.asyncio.from_url(f"hotkv://127.0.0.1:{server.port}", resp3=resp3)
        try:
            await client.execute_command("FLUSHALL")
            assert await client.amem_conv_create("a1", window=5, ttl=60) is True
            assert await client.amem_conv_append("a1", "user", "hello") is True
            assert [t["content"] for t in await client.amem_conv_window("a1", 5)] == [b"hello"]
            assert await client.amem_conv_clear("a1") is True
            assert await client.amem_sem_create("kb", 2) is True
            assert await client.amem_sem_store("kb", "x", "t", [0.0, 1.0]) is True
            hits = await client.amem_sem_recall("kb", 1, [0.0, 1.0])
            assert hits[0]["id"] == b"x" and hits[0]["similarity"] > 0.99
            assert await client.amem_work_set("a1", "k", "v") is True
            assert await client.amem_work_list("a1") == [b"k"]
            assert await client.amem_epis_log("a1", "obs", "seen") is True
            assert (await client.amem_epis_stats("a1"))["total_events"] == 1
            assert await client.amem_summary_set("a1", "s") == 1
            assert (await client.amem_summary_get("a1"))[:2] == (b"s", 1)
            assert await client.amem_search("kb", 1, [0.0, 1.0]) != []
            pipe = client.pipeline(transaction=True)
            await pipe.amem_work_set("a1", "k2", "v2")  # the async pipeline queues by await
            await pipe.amem_work_get("a1", "k2")
            assert await pipe.execute() == [True, b"v2"]
            assert await client.amem_conv_drop("a1") is True
        finally:
            await client.close()

    for resp3 in (True, False):
        asyncio.run(main(resp3))


def _record(reply: Any) -> dict[Any, Any]:
    """A map reply as a dict, whether RESP3 sent a map or RESP2 a flat array."""
    return reply if isinstance(reply, dict) else dict(zip(reply[::2], reply[1::2], strict=True))


def test_installs_beside_the_official_packages_without_a_clash() -> None:
    """hotkv, hotkv-client, hotkv-mcp and langgraph-checkpoint-hotkv share one environment:
    no installed file (module, console script) belongs to two of them."""
    import importlib.metadata as md

    owners: dict[str, list[str]] = {}
    for name in ("hotkv", "hotkv-client", "hotkv-mcp", "langgraph-checkpoint-hotkv"):
        dist = md.distribution(name)
        for path in dist.files or []:
            if "__pycache__" not in str(path) and ".dist-info" not in str(path):
                owners.setdefault(str(path), []).append(name)
    assert {path: names for path, names in owners.items() if len(names) > 1} == {}
    scripts = {ep.name: ep.value for ep in md.entry_points(group="console_scripts")
               if ep.name.startswith("hotkv")}
    assert scripts["hotkv-mcp"] == "hotkv_mcp.__main__:main"  # the official server's
    assert scripts["hotkv-memory-mcp"] == "hotkv_server.clients.mcp_server:main"
    import hotkv_server

    assert hotkv.__file__ != hotkv_server.__file__ and hotkv.__version__ == "1.0.0"
