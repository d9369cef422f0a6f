"""The hotkv client against a real server: every AMEM method, sync and asyncio, RESP2 and
RESP3, every typed error, pipelines and transactions, URLs and decoding.

Each scenario is written once as a generator that yields calls (``yield C.amem_conv_len("s")``)
and receives their results, or the exception a call raised; a sync driver and an asyncio
driver run the same scenario, so both clients are held to the same assertions.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any

import numpy as np
import pytest
import redis
from redis.exceptions import ResponseError

import hotkv_server as hotkv
import hotkv_server.asyncio
from helpers import HotkvProcess
from hotkv_server.clients.embedding import hashed_embedding

Step = tuple[str, tuple[Any, ...], dict[str, Any]]
Scenario = Generator[Step, Any, None]


class _Calls:
    """``C.amem_x(*a, **k)`` -> the step ``("amem_x", a, k)`` for a driver to run."""

    def __getattr__(self, name: str) -> Callable[..., Step]:
        return lambda *args, **kwargs: (name, args, kwargs)


C = _Calls()


def embed(text: str) -> np.ndarray:
    """The deterministic embedding of the README snippet."""
    return hashed_embedding(text, 64)


# --- scenarios ------------------------------------------------------------------------
def scenario_conversation() -> Scenario:
    assert (yield C.amem_conv_create("s1", window=3, ttl=3600)) is True
    assert (yield C.amem_conv_append("s1", "user", "hello")) == 1
    assert (yield C.amem_conv_append("s1", "Assistant", "hi there", meta={"tool": "none"})) == 2
    turns = yield C.amem_conv_window("s1")
    assert [(t["seq"], t["role"], t["content"]) for t in turns] == [
        (1, "user", "hello"), (2, "assistant", "hi there")]
    assert turns[1]["meta"] == {"tool": "none"}
    assert "meta" not in turns[0]
    assert isinstance(turns[0]["ts"], int) and turns[0]["ts"] > 1_600_000_000_000
    for content in ("a", "b"):
        yield C.amem_conv_append("s1", "tool", content)
    assert [t["seq"] for t in (yield C.amem_conv_window("s1"))] == [2, 3, 4]
    assert [t["content"] for t in (yield C.amem_conv_window("s1", 1))] == ["b"]
    assert (yield C.amem_conv_len("s1")) == 3
    assert (yield C.amem_conv_len("missing")) == 0
    assert (yield C.amem_conv_window("missing")) == []
    info = yield C.amem_conv_info("s1")
    assert list(info) == ["window", "ttl", "turns", "appended", "created", "updated"]
    assert info["window"] == 3 and info["turns"] == 3 and info["appended"] == 4
    assert 3_500_000 < info["ttl"] <= 3_600_000
    assert (yield C.amem_conv_create("s1", window=2, px=5000, update=True)) is True
    info = yield C.amem_conv_info("s1")
    assert info["window"] == 2 and info["turns"] == 2 and info["ttl"] <= 5000
    assert (yield C.amem_conv_info("missing")) is None
    yield C.amem_conv_create("s2")
    assert (yield C.amem_conv_del("s1", "s2", "missing")) == 2


def scenario_semantic() -> Scenario:
    assert (yield C.amem_sem_create("kb", 3, metric="COSINE", m=8, ef_construction=100, ef=32,
                                    capacity=100, evict="OLDEST")) is True
    info = yield C.amem_sem_info("kb")
    assert info == {"dim": 3, "metric": "COSINE", "count": 0, "capacity": 100, "evict": "OLDEST",
                    "m": 8, "ef_construction": 100, "ef": 32}
    assert (yield C.amem_sem_create("kb", 3, ef=48, update=True)) is True
    assert (yield C.amem_sem_info("kb"))["ef"] == 48
    # a list, a numpy array and a ready FP32 blob are all accepted
    assert (yield C.amem_sem_store("kb", "/pref/tone", "prefers short answers", [1.0, 0.0, 0.0],
                                   kind="preference", confidence=0.9, source="chat",
                                   description="tone", meta={"by": "user"}, ttl=3600)) == 1
    assert (yield C.amem_sem_store("kb", "/facts/plan", "on the pro plan",
                                   np.array([0.0, 1.0, 0.0]))) == 1
    assert (yield C.amem_sem_store("kb", "/facts/city", "lives in Oslo",
                                   np.array([0, 0, 1], dtype="<f4").tobytes(), px=600_000)) == 1
    assert (yield C.amem_sem_store("kb", "/facts/plan", "on the team plan", [0.1, 1.0, 0.0])) == 0
    assert (yield C.amem_sem_store("kb", "/facts/plan", "x", [0, 1, 0], nx=True)) is None
    assert (yield C.amem_sem_store("kb", "/facts/none", "x", [0, 1, 0], xx=True)) is None

    hits = yield C.amem_sem_recall("kb", 2, [0.9, 0.1, 0.0])
    assert [h["id"] for h in hits] == ["/pref/tone", "/facts/plan"]
    top = hits[0]
    assert list(top)[:3] == ["id", "text", "similarity"]
    assert isinstance(top["similarity"], float) and top["similarity"] > 0.99
    assert top["kind"] == "preference" and top["confidence"] == pytest.approx(0.9)
    assert top["source"] == "chat" and top["description"] == "tone"
    assert top["meta"] == {"by": "user"} and top["expires"] > top["created"]
    assert "vector" not in top and "expires" not in hits[1]
    hits = yield C.amem_sem_recall("kb", 3, [1, 1, 1], kind="fact", minconf=0.5,
                                   prefix="/facts/", ef=50, minsim=0.1, withvectors=True)
    assert sorted(h["id"] for h in hits) == ["/facts/city", "/facts/plan"]
    assert all(isinstance(h["vector"], bytes) for h in hits)
    city = next(h for h in hits if h["id"] == "/facts/city")
    assert hotkv.from_fp32(city["vector"]) == [0.0, 0.0, 1.0]

    fact = yield C.amem_sem_get("kb", "/facts/plan")
    assert fact["text"] == "on the team plan" and "similarity" not in fact and "vector" not in fact
    fact = yield C.amem_sem_get("kb", "/facts/plan", withvector=True)
    stored = np.array(hotkv.from_fp32(fact["vector"]))  # COSINE may keep it normalised
    assert stored / np.linalg.norm(stored) == pytest.approx(np.array([0.1, 1.0, 0.0]) / np.hypot(0.1, 1.0))
    assert (yield C.amem_sem_get("kb", "/nope")) is None

    cursor, page = yield C.amem_sem_list("kb", count=2)
    assert [f["id"] for f in page] == ["/facts/city", "/facts/plan"] and cursor != "0"
    cursor, page = yield C.amem_sem_list("kb", cursor=cursor, count=2)
    assert [f["id"] for f in page] == ["/pref/tone"] and cursor == "0"
    assert [f["id"] for f in (yield C.amem_sem_list("kb", prefix="/pref/"))[1]] == ["/pref/tone"]
    assert [f["id"] for f in (yield C.amem_sem_list("kb", kind="fact"))[1]] == [
        "/facts/city", "/facts/plan"]

    assert (yield C.amem_sem_del("kb", "/facts/city", "/nope")) == 1
    assert (yield C.amem_sem_info("kb"))["count"] == 2
    assert (yield C.amem_sem_drop("kb")) is True
    assert (yield C.amem_sem_drop("kb")) is False
    assert (yield C.amem_sem_info("kb")) is None


def scenario_search() -> Scenario:
    """Text and hybrid search, exact recall, and the recall self-check's INFO fields."""
    yield C.amem_sem_create("docs", 2)
    yield C.amem_sem_store("docs", "/a", "the quick brown fox", [1, 0], confidence=0.9)
    yield C.amem_sem_store("docs", "/b", "quick quick fox jumps", [0, 1], kind="note")
    yield C.amem_sem_store("docs", "/c", "a lazy dog sleeps", [0.7, 0.7])
    yield C.amem_epis_log("docs", "obs", "a quick fox was seen")
    across = yield C.amem_search("docs", 3, [1, 0], text="quick fox")
    assert [h["source"] for h in across] == ["semantic", "episodic", "semantic"]
    assert [h["similarity"] for h in across][:2] == [1.0, 1.0]  # equal: semantic first
    assert across[2]["id"] == "/c"
    assert (yield C.amem_search("docs", 3, [1, 0]))[1]["id"] == "/c"  # no TEXT: semantic only
    hits = yield C.amem_sem_search("docs", 3, "quick fox")  # BM25 alone: no vector, no /c
    assert [h["id"] for h in hits] == ["/b", "/a"]
    assert list(hits[0])[:4] == ["id", "text", "score", "text_score"]
    assert "similarity" not in hits[0]
    assert all(isinstance(h["score"], float) and h["score"] == h["text_score"] for h in hits)
    hits = yield C.amem_sem_search("docs", 3, "quick fox", vector=[1, 0])  # RRF fusion
    assert [h["id"] for h in hits] == ["/a", "/b", "/c"]
    assert hits[0]["similarity"] == pytest.approx(1.0) and hits[2]["text_score"] == 0.0
    assert hits[0]["score"] == pytest.approx(1 / 61 + 1 / 62)  # first by vector, second by text
    hits = yield C.amem_sem_search("docs", 3, "quick fox", vector=[1, 0], fusion="linear",
                                   alpha=1.0)  # the vector's similarity alone
    assert [(h["id"], h["score"]) for h in hits] == [
        ("/a", pytest.approx(1.0)), ("/c", pytest.approx(0.5 ** 0.5)), ("/b", 0.0)]
    hits = yield C.amem_sem_search("docs", 3, "quick", kind="note", minscore=0.1, minconf=0.5,
                                   prefix="/b")
    assert [(h["id"], h["kind"]) for h in hits] == [("/b", "note")]
    assert (yield C.amem_sem_search("docs", 3, "quick", minconf=0.95, prefix="/a")) == []
    hits = yield C.amem_sem_recall("docs", 2, [1, 0], exact=True)
    assert [(h["id"], h["similarity"]) for h in hits] == [
        ("/a", pytest.approx(1.0)), ("/c", pytest.approx(0.5 ** 0.5))]
    deadline = time.monotonic() + 10  # the server's cron runs the self-check soon after
    while "recall_estimate" not in (info := (yield C.amem_sem_info("docs"))):
        assert time.monotonic() < deadline, info
        time.sleep(0.05)
    assert list(info)[-3:] == ["recall_estimate", "recall_sample", "recall_checked"]
    assert isinstance(info["recall_estimate"], float) and 0.0 <= info["recall_estimate"] <= 1.0
    # the cron may start the check before the third fact lands (a loaded machine): it samples
    # the facts there were then, and checks again only after its interval
    assert info["recall_sample"] in (2, 3) and info["recall_checked"] > 1_600_000_000_000


def scenario_working() -> Scenario:
    assert (yield C.amem_work_set("s", "ticket", "T-42")) is True
    assert (yield C.amem_work_get("s", "ticket")) == "T-42"
    assert (yield C.amem_work_set("s", "ticket", "T-43", nx=True)) is None
    assert (yield C.amem_work_set("s", "other", "x", xx=True)) is None
    assert (yield C.amem_work_set("s", "ticket", "T-44", xx=True, px=50_000)) is True
    assert 0 < (yield C.amem_work_ttl("s", "ticket")) <= 50_000
    assert (yield C.amem_work_set("s", "ticket", "T-45", keepttl=True)) is True
    assert (yield C.amem_work_ttl("s", "ticket")) > 0
    assert (yield C.amem_work_set("s", "ticket", "T-46", ttl=30)) is True
    assert 0 < (yield C.amem_work_ttl("s", "ticket")) <= 30_000
    assert (yield C.amem_work_set("s", "ticket", "T-47")) is True
    assert (yield C.amem_work_ttl("s", "ticket")) == -1
    assert (yield C.amem_work_ttl("s", "missing")) == -2
    # MERGE: the reply is the new stored value
    assert (yield C.amem_work_set("s", "steps", "read", merge="APPEND")) == '["read"]'
    assert (yield C.amem_work_set("s", "steps", {"n": 2}, merge="APPEND")) == '["read",{"n":2}]'
    assert (yield C.amem_work_set("s", "count", 2, merge="INCR")) == "2"
    assert (yield C.amem_work_set("s", "count", 3, merge="INCR")) == "5"
    assert (yield C.amem_work_set("s", "count", 9, merge="MAX")) == "9"
    assert (yield C.amem_work_set("s", "count", 4, merge="MIN")) == "4"
    assert (yield C.amem_work_set("s", "count", 7, merge="REPLACE")) is True
    # a dict or a list is stored as JSON
    assert (yield C.amem_work_set("s", "ctx", {"a": [1, 2]})) is True
    assert (yield C.amem_work_get("s", "ctx")) == '{"a":[1,2]}'
    assert (yield C.amem_work_get("s", "missing")) is None
    assert (yield C.amem_work_get("s", "missing", default="none")) == "none"
    assert (yield C.amem_work_mget("s", "ticket", "missing", "count")) == ["T-47", None, "7"]
    assert (yield C.amem_work_len("s")) == 4
    assert (yield C.amem_work_getall("s")) == {
        "ticket": "T-47", "steps": '["read",{"n":2}]', "count": "7", "ctx": '{"a":[1,2]}'}
    assert (yield C.amem_work_del("s", "ctx", "missing")) == 1
    assert (yield C.amem_work_expire("s", 100)) is True
    assert (yield C.amem_work_expire("missing", 100)) is False
    assert (yield C.amem_work_clear("s")) == 3
    assert (yield C.amem_work_getall("s")) == {}
    assert (yield C.amem_work_len("s")) == 0


def scenario_episodic_and_summary() -> Scenario:
    first = yield C.amem_epis_log("agent-1", "action", "opened ticket", meta={"t": 42},
                                  source="helpdesk")
    second = yield C.amem_epis_log("agent-1", "observation", "customer angry")
    third = yield C.amem_epis_log("agent-1", "action", "refunded")
    assert isinstance(first, str) and first.count("-") == 1
    events = yield C.amem_epis_query("agent-1")
    assert [e["id"] for e in events] == [first, second, third]
    assert events[0] == {"id": first, "timestamp": int(first.split("-")[0]), "type": "action",
                         "text": "opened ticket", "source": "helpdesk", "meta": {"t": 42}}
    assert [e["text"] for e in (yield C.amem_epis_query("agent-1", type="action"))] == [
        "opened ticket", "refunded"]
    assert [e["id"] for e in (yield C.amem_epis_query("agent-1", rev=True, limit=2))] == [
        third, second]
    assert [e["id"] for e in (yield C.amem_epis_query("agent-1", start=second, end="+"))] == [
        second, third]
    assert [e["id"] for e in (yield C.amem_epis_query("agent-1", start="-", end=first))] == [first]
    assert (yield C.amem_epis_query("missing")) == []
    assert (yield C.amem_epis_len("agent-1")) == 3
    assert (yield C.amem_epis_trim("agent-1", before=second)) == 1
    assert (yield C.amem_epis_trim("agent-1", maxlen=1)) == 1
    assert (yield C.amem_epis_len("agent-1")) == 1

    assert (yield C.amem_summary_set("agent-1", "Refunds handled.", upto=third)) == 1
    assert (yield C.amem_summary_get("agent-1"))["upto"] == third
    assert (yield C.amem_summary_append("agent-1", "Customer calmer.", ifversion=1)) == 2
    assert (yield C.amem_summary_set("agent-1", "Refunded; calmer.", ifversion=2,
                                     upto=second)) == 3
    summary = yield C.amem_summary_get("agent-1")
    assert summary["text"] == "Refunded; calmer." and summary["version"] == 3
    assert summary["upto"] == second and isinstance(summary["updated"], int)
    assert (yield C.amem_summary_append("agent-2", "first line")) == 1
    assert (yield C.amem_summary_get("agent-2")) == {
        "text": "first line", "version": 1, "updated": (yield C.amem_summary_get("agent-2"))["updated"]}
    assert (yield C.amem_summary_del("agent-2")) is True
    assert (yield C.amem_summary_del("agent-2")) is False
    assert (yield C.amem_summary_get("agent-2")) is None
    assert (yield C.amem_epis_del("agent-1")) is True
    assert (yield C.amem_epis_del("agent-1")) is False


def scenario_scan() -> Scenario:
    for i in range(5):
        yield C.amem_conv_create(f"t:{i}")
    yield C.amem_work_set("t:0", "k", "v")
    cursor, ids = yield C.amem_scan(0, "conv", count=3)
    assert ids == ["t:0", "t:1", "t:2"] and cursor != "0"
    cursor, ids = yield C.amem_scan(cursor, "conv", count=3)
    assert ids == ["t:3", "t:4"] and cursor == "0"
    assert (yield C.amem_scan(0, "conv", match="t:[13]"))[1] == ["t:1", "t:3"]
    assert (yield C.amem_scan(0, "work"))[1] == ["t:0"]


def scenario_errors() -> Scenario:
    missing = yield C.amem_conv_append("nobody", "user", "hi")
    assert isinstance(missing, hotkv.NotFound) and isinstance(missing, ResponseError)
    assert missing.status_code == "NOTFOUND"
    assert str(missing) == "session not found: 'nobody'; create it with AMEM.CONV.CREATE"
    assert isinstance((yield C.amem_conv_create("c", update=True)), hotkv.NotFound)
    assert isinstance((yield C.amem_sem_recall("nokb", 1, [1.0])), hotkv.NotFound)
    yield C.amem_conv_create("c")
    exists = yield C.amem_conv_create("c")
    assert isinstance(exists, hotkv.Exists) and exists.status_code == "EXISTS"
    yield C.amem_sem_create("kb", 2, capacity=1, evict="NONE")
    assert isinstance((yield C.amem_sem_create("kb", 2)), hotkv.Exists)
    dim = yield C.amem_sem_store("kb", "a", "a", [1.0, 0.0, 0.0])
    assert isinstance(dim, hotkv.DimensionError) and dim.status_code == "DIM"
    assert isinstance((yield C.amem_sem_store("kb", "z", "z", [0.0, 0.0])), hotkv.DimensionError)
    assert isinstance((yield C.amem_sem_recall("kb", 1, [1.0])), hotkv.DimensionError)
    yield C.amem_sem_store("kb", "a", "a", [1.0, 0.0])
    full = yield C.amem_sem_store("kb", "b", "b", [0.0, 1.0])
    assert isinstance(full, hotkv.Full) and full.status_code == "FULL"
    yield C.amem_summary_set("agent", "v1")
    conflict = yield C.amem_summary_set("agent", "v2", ifversion=0)
    assert isinstance(conflict, hotkv.Conflict) and conflict.current_version == 1
    assert str(conflict) == "summary of 'agent' is at version 1"
    assert isinstance((yield C.amem_summary_append("agent", "x", ifversion=5)), hotkv.Conflict)
    # every memory error is an AmemError; ERR stays redis-py's plain ResponseError
    for exc in (missing, exists, dim, full, conflict):
        assert isinstance(exc, hotkv.AmemError)
    syntax = yield C.amem_conv_create("d", window=0)
    assert type(syntax) is ResponseError and "WINDOW" in str(syntax)
    # the connection stays usable after every error
    assert (yield C.amem_conv_len("c")) == 0


SCENARIOS = [scenario_conversation, scenario_semantic, scenario_search, scenario_working,
             scenario_episodic_and_summary, scenario_scan, scenario_errors]


# --- drivers --------------------------------------------------------------------------
def drive(scenario: Callable[[], Scenario], call: Callable[[Step], Any]) -> None:
    steps = scenario()
    result: Any = None
    try:
        while True:
            step = steps.send(result)
            try:
                result = call(step)
            except redis.RedisError as exc:
                result = exc
    except StopIteration:
        pass


async def drive_async(scenario: Callable[[], Scenario], client: hotkv_server.asyncio.Hotkv) -> None:
    steps = scenario()
    result: Any = None
    try:
        while True:
            name, args, kwargs = steps.send(result)
            try:
                result = await getattr(client, name)(*args, **kwargs)
            except redis.RedisError as exc:
                result = exc
    except StopIteration:
        pass


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def protocol(request: pytest.FixtureRequest) -> int:
    return int(request.param)


@pytest.fixture
def url(server: HotkvProcess) -> str:
    return f"hotkv://127.0.0.1:{server.port}"


@pytest.fixture
def hk(url: str, protocol: int) -> Iterator[hotkv.Hotkv]:
    client = hotkv.from_url(url, protocol=protocol)
    client.flushall()
    try:
        yield client
    finally:
        client.close()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__[9:])
def test_sync(hk: hotkv.Hotkv, scenario: Callable[[], Scenario]) -> None:
    drive(scenario, lambda step: getattr(hk, step[0])(*step[1], **step[2]))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__[9:])
def test_asyncio(url: str, protocol: int, scenario: Callable[[], Scenario]) -> None:
    async def run() -> None:
        client = hotkv_server.asyncio.from_url(url, protocol=protocol)
        try:
            await client.flushall()
            await drive_async(scenario, client)
        finally:
            await client.aclose()

    asyncio.run(run())


def test_every_command_has_a_method_and_a_scenario() -> None:
    """One method per AMEM command in the server's command table, each used above."""
    from hotkv_server.clients.replies import RESPONSE_CALLBACKS
    from hotkv_server.commands import load_all
    from hotkv_server.engine.registry import COMMANDS

    load_all()
    # hotkv's own commands and the dialect's commands that take hotkv extensions; a command
    # only of the HotKV dialect is the official client's (hotkv-client, docs/dialect.md)
    server_commands = {name.upper() for name, spec in COMMANDS.items()
                       if name.startswith("amem.") and (not spec.dialect or spec.extensions)}
    methods = {name for name in dir(hotkv.Hotkv) if name.startswith("amem_")}
    for command in server_commands:
        assert command in RESPONSE_CALLBACKS, command
        assert command.lower().replace(".", "_") in methods, command
    import inspect
    source = inspect.getsource(inspect.getmodule(test_every_command_has_a_method_and_a_scenario))  # type: ignore[arg-type]
    for method in methods - {"amem_scan_iter", "amem_sem_list_iter"}:
        assert f"C.{method}(" in source, f"{method} is not exercised by a scenario"


# --- the README snippet -----------------------------------------------------------------
def test_readme_snippet(url: str, protocol: int) -> None:
    setup = hotkv.from_url(url, protocol=protocol)
    setup.flushall()
    setup.amem_sem_create("support-kb", 64)
    for i, fact in enumerate(["Refunds are issued within 5 business days",
                              "The pro plan costs 20 dollars a month",
                              "Support is open on weekdays"]):
        setup.amem_sem_store("support-kb", f"fact-{i}", fact, embed(fact))
    session, agent = "session-42", "agent-support"
    question = "Refunds are issued within 5 business days"
    setup.amem_work_set(session, "ticket", "T-1001")

    # --- as written in the brief, with redis:// and rediss:// also accepted ---
    r = hotkv.from_url(url.replace("hotkv://127.0.0.1", "hotkv://localhost"), protocol=protocol)
    r.amem_conv_create(session, window=50, ttl=86400)
    r.amem_conv_append(session, "user", question)
    turns = r.amem_conv_window(session, 10)          # list of dicts: seq, role, content, ts
    facts = r.amem_sem_recall("support-kb", 3, embed(question))   # list of dicts with "similarity"
    facts = [f for f in facts if f["similarity"] >= 0.8]
    ticket = r.amem_work_get(session, "ticket")
    r.amem_epis_log(agent, "action", "Answered a billing question")
    r.amem_work_set(session, "last_step", "answered")

    assert [{k: t[k] for k in ("seq", "role", "content")} for t in turns] == [
        {"seq": 1, "role": "user", "content": question}]
    assert isinstance(turns[0]["ts"], int)
    assert [f["id"] for f in facts] == ["fact-0"] and facts[0]["similarity"] > 0.99
    assert ticket == "T-1001"
    assert [e["text"] for e in r.amem_epis_query(agent)] == ["Answered a billing question"]
    assert r.amem_work_get(session, "last_step") == "answered"
    r.close()
    setup.close()


# --- redis-py behaviour kept ------------------------------------------------------------
@pytest.mark.parametrize("transaction", [True, False], ids=["multi", "pipeline"])
def test_pipelines_decode_and_raise_typed_errors(hk: hotkv.Hotkv, transaction: bool) -> None:
    hk.amem_sem_create("kb", 2)
    pipe = hk.pipeline(transaction=transaction)
    assert isinstance(pipe, hotkv.Pipeline)
    (pipe.amem_conv_create("s").amem_conv_append("s", "user", "hi")
     .amem_sem_store("kb", "a", "alpha", [1, 0]).amem_sem_get("kb", "a", withvector=True)
     .amem_work_set("s", "n", 1, merge="INCR").amem_conv_window("s").amem_scan(0, "conv"))
    created, seq, stored, fact, merged, turns, scan = pipe.execute()
    assert created is True and seq == 1 and stored == 1 and merged == "1"
    assert fact["text"] == "alpha" and hotkv.from_fp32(fact["vector"]) == [1.0, 0.0]
    assert [t["content"] for t in turns] == ["hi"] and scan == ("0", ["s"])

    pipe = hk.pipeline(transaction=transaction)
    pipe.amem_conv_append("missing", "user", "x").amem_conv_len("s")
    with pytest.raises(hotkv.NotFound):
        pipe.execute()
    pipe = hk.pipeline(transaction=transaction)
    pipe.amem_conv_append("missing", "user", "x").amem_conv_len("s")
    missing, length = pipe.execute(raise_on_error=False)
    assert isinstance(missing, hotkv.NotFound) and length == 1


def test_transaction_helper_with_watch(hk: hotkv.Hotkv) -> None:
    hk.amem_conv_create("s")

    def turn(pipe: hotkv.Pipeline) -> None:
        pipe.multi()
        pipe.amem_conv_append("s", "user", "q")
        pipe.amem_epis_log("agent", "action", "asked")
        pipe.amem_summary_append("agent", "asked q")

    seq, event_id, version = hk.transaction(turn, "s")
    assert seq == 1 and isinstance(event_id, str) and version == 1


def test_asyncio_pipeline_and_transaction(url: str, protocol: int) -> None:
    async def run() -> None:
        client = hotkv_server.asyncio.from_url(url, protocol=protocol)
        await client.flushall()
        async with client.pipeline(transaction=True) as pipe:
            pipe.amem_conv_create("s").amem_conv_append("s", "user", "hi").amem_conv_window("s")
            created, seq, turns = await pipe.execute()
        assert created is True and seq == 1 and turns[0]["content"] == "hi"
        async with client.pipeline(transaction=False) as pipe:
            pipe.amem_summary_set("a", "x").amem_summary_set("a", "y", ifversion=0)
            version, conflict = await pipe.execute(raise_on_error=False)
        assert version == 1 and isinstance(conflict, hotkv.Conflict)
        assert [i async for i in client.amem_scan_iter("conv")] == ["s"]
        await client.amem_sem_create("kb", 2)
        for i in range(5):
            await client.amem_sem_store("kb", f"f{i}", "t", [1, i])
        assert [f["id"] async for f in client.amem_sem_list_iter("kb", count=2)] == [
            f"f{i}" for i in range(5)]
        await client.aclose()

    asyncio.run(run())


def test_iterators_walk_everything(hk: hotkv.Hotkv) -> None:
    for i in range(25):
        hk.amem_work_set(f"w{i:02d}", "k", "v")
    assert list(hk.amem_scan_iter("work", count=7)) == [f"w{i:02d}" for i in range(25)]
    assert list(hk.amem_scan_iter("work", match="w1*")) == [f"w1{i}" for i in range(10)]
    hk.amem_sem_create("kb", 2)
    for i in range(12):
        hk.amem_sem_store("kb", f"f{i:02d}", "t", [1, i])
    assert [f["id"] for f in hk.amem_sem_list_iter("kb", count=5)] == [f"f{i:02d}" for i in range(12)]


def test_decode_responses_client_decodes_the_same(url: str, protocol: int) -> None:
    """A client made with decode_responses=True gives the same values, vectors intact."""
    r = hotkv.from_url(url, protocol=protocol, decode_responses=True)
    r.flushall()
    r.amem_sem_create("kb", 2, metric="L2")  # L2 keeps the vector as given
    blob = np.array([0.5, -2.0], dtype="<f4").tobytes()
    assert blob.decode("latin-1")  # not valid UTF-8 text as a whole
    r.amem_sem_store("kb", "a", "alpha", blob, meta={"k": "v"})
    fact = r.amem_sem_get("kb", "a", withvector=True)
    assert fact["vector"] == blob and fact["meta"] == {"k": "v"}
    assert r.amem_sem_recall("kb", 1, [0.5, -2.0], withvectors=True)[0]["vector"] == blob
    r.set("plain", "redis")  # the Redis commands keep redis-py's decoding
    assert r.get("plain") == "redis"
    r.close()


def test_binary_text_round_trips(hk: hotkv.Hotkv) -> None:
    """Text that is not UTF-8 comes back as str with surrogate escapes, losslessly."""
    raw = b"caf\xe9 \xff"
    hk.amem_conv_create(b"bin\xfe")
    hk.amem_conv_append(b"bin\xfe", "user", raw)
    content = hk.amem_conv_window(b"bin\xfe")[0]["content"]
    assert content.encode("utf-8", "surrogateescape") == raw
    assert hk.amem_scan(0, "conv")[1][0].encode("utf-8", "surrogateescape") == b"bin\xfe"
    hk.amem_work_set("s", "k", "naïve ✓")
    assert hk.amem_work_get("s", "k") == "naïve ✓"


def test_redis_commands_and_urls(server: HotkvProcess, protocol: int) -> None:
    for scheme in ("hotkv", "HOTKV", "redis"):
        r = hotkv.from_url(f"{scheme}://127.0.0.1:{server.port}/0", protocol=protocol)
        assert isinstance(r, hotkv.Hotkv) and isinstance(r, redis.Redis)
        assert r.ping() is True
        assert r.set("k", "v") is True and r.get("k") == b"v"
        r.close()
    for scheme in ("hotkvs", "rediss"):
        pool = hotkv.from_url(f"{scheme}://127.0.0.1:{server.port}").connection_pool
        assert issubclass(pool.connection_class, redis.SSLConnection)
        assert pool.connection_kwargs["parser_class"] is hotkv_server.clients.errors.HotkvParser
    unix = hotkv.from_url("unix:///tmp/hotkv.sock").connection_pool
    assert issubclass(unix.connection_class, redis.UnixDomainSocketConnection)
    assert hotkv_server.asyncio.from_url("hotkvs://h:1").connection_pool.connection_kwargs["port"] == 1


def test_constructor_and_single_connection(server: HotkvProcess, protocol: int) -> None:
    r = hotkv.Hotkv(host="127.0.0.1", port=server.port, protocol=protocol,
                    single_connection_client=True)
    with pytest.raises(hotkv.NotFound):
        r.amem_conv_append("nobody", "user", "x")
    assert r.connection is not None and r.client_id() == r.client_id()
    r.close()
    plain = redis.Redis(host="127.0.0.1", port=server.port, protocol=protocol)
    with pytest.raises(ResponseError) as info:  # a plain redis-py client is not changed
        plain.execute_command("AMEM.CONV.APPEND", "nobody", "user", "x")
    assert type(info.value) is ResponseError
    plain.close()


def test_durations_accept_timedelta(hk: hotkv.Hotkv) -> None:
    from datetime import timedelta

    hk.amem_conv_create("s", ttl=timedelta(minutes=1))
    assert 55_000 < hk.amem_conv_info("s")["ttl"] <= 60_000  # type: ignore[index]
    hk.amem_work_set("s", "k", "v", px=timedelta(seconds=2))
    assert 0 < hk.amem_work_ttl("s", "k") <= 2000
    assert hk.amem_work_expire("s", timedelta(seconds=5)) is True
    with pytest.raises(ValueError):
        hk.amem_epis_trim("a")
    with pytest.raises(ValueError):
        hk.amem_sem_store("kb", "x", "x", np.zeros((2, 2)))


def test_sem_search_of_a_namespace_without_facts_is_empty(hk: hotkv.Hotkv) -> None:
    """AMEM.SEM.SEARCH (text search) on a namespace that holds no facts answers no hits,
    not an error (the scenario test covers searches that find facts)."""
    hk.amem_sem_create("kb", 2)
    assert hk.amem_sem_search("kb", 3, "anything") == []


def test_expired_conversation_is_gone(hk: hotkv.Hotkv) -> None:
    hk.amem_conv_create("short", px=100)
    hk.amem_conv_append("short", "user", "x")
    time.sleep(0.25)
    assert hk.amem_conv_window("short") == [] and hk.amem_conv_info("short") is None


def test_dir_shows_the_lazily_imported_names() -> None:
    """``dir(hotkv_server)`` in a REPL lists the client names loaded on first use."""
    names = set(dir(hotkv))
    assert set(hotkv.__all__) <= names
    assert {"Hotkv", "from_url", "NotFound", "to_fp32", "__version__"} <= names
