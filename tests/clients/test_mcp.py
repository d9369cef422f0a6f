"""hotkv-mcp through the MCP SDK's own client: over stdio (the server as a child process,
as an assistant starts it) and over streamable HTTP, against a real hotkv server."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import tomllib
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import redis
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from helpers import ROOT, HotkvProcess, free_port
from hotkv_server.clients.mcp_server import McpConfig, assistant_message, parse_config

WRITE_TOOLS = {"append_turn", "clear_conversation", "write_note", "delete_note", "log_event",
               "write_summary", "append_summary", "store_fact", "forget_fact"}
READ_TOOLS = {"read_turns", "read_notes", "query_events", "read_summary", "recall_facts",
              "list_facts", "list_ids"}


def _params(server: HotkvProcess, *flags: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "hotkv_server.clients.mcp_server", "--url", f"redis://127.0.0.1:{server.port}",
              *flags],
        env={"PYTHONPATH": str(ROOT / "src")},
    )


def with_mcp(server: HotkvProcess, *flags: str) -> Callable[[Callable[[Client], Awaitable[None]]], None]:
    """Run ``body(client)`` with an MCP client connected to a hotkv-mcp child over stdio."""

    def run(body: Callable[[Client], Awaitable[None]]) -> None:
        async def main() -> None:
            async with Client(_params(server, *flags)) as client:
                await body(client)

        asyncio.run(main())

    return run


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool} failed: {result.content}"
    assert result.structured_content is not None
    # the text content carries the same JSON for clients that only read text
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content


async def call_error(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} should have failed: {result.structured_content}"
    return result.content[0].text  # type: ignore[union-attr]


def test_without_a_server_embedder_recall_goes_by_text(server: HotkvProcess,
                                                        raw: redis.Redis) -> None:
    async def body(client: Client) -> None:
        for fid, text in [("deploy", "deployments happen on friday afternoons"),
                          ("db", "the database is postgres version sixteen")]:
            await call(client, "store_fact", namespace="proj", id=fid, text=text)
        recalled = await call(client, "recall_facts", namespace="proj",
                              query="which database version do we use", k=2)
        assert recalled["matched_by"] == "text-search"  # the server has AMEM.SEM.SEARCH
        assert recalled["facts"][0]["id"] == "db"
        assert recalled["facts"][0]["text_score"] > 0 and "similarity" not in recalled["facts"][0]
        assert b"embedder" not in raw.execute_command("AMEM.SEM.INFO", "proj")

    with_mcp(server, "--embedder", "none")(body)


@pytest.fixture
def raw(server: HotkvProcess) -> redis.Redis:
    client = server.client(protocol=3)
    client.flushall()
    return client


def test_lists_every_tool_with_hints(server: HotkvProcess, raw: redis.Redis) -> None:
    async def body(client: Client) -> None:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == WRITE_TOOLS | READ_TOOLS
        for name, tool in tools.items():
            assert tool.description, name
            assert tool.annotations is not None
            assert tool.annotations.read_only_hint is (name in READ_TOOLS), name
        destructive = {name for name, tool in tools.items()
                       if tool.annotations.destructive_hint}  # type: ignore[union-attr]
        # what removes or replaces memory the assistant cannot get back
        assert destructive == {"clear_conversation", "delete_note", "write_summary", "forget_fact"}
        schema = tools["append_turn"].input_schema
        assert set(schema["required"]) == {"session", "role", "content"}
        assert client.server_info is not None and client.server_info.name == "hotkv"

    with_mcp(server)(body)


def test_every_tool(server: HotkvProcess, raw: redis.Redis) -> None:
    async def body(client: Client) -> None:
        # conversation memory, created on first use with the configured defaults
        assert await call(client, "append_turn", session="s", role="user", content="hi") == {
            "session": "s", "seq": 1}
        await call(client, "append_turn", session="s", role="assistant", content="hello")
        turns = (await call(client, "read_turns", session="s", last=1))["turns"]
        assert [(t["seq"], t["role"], t["content"]) for t in turns] == [(2, "assistant", "hello")]
        info = raw.execute_command("AMEM.CONV.INFO", "s")
        assert info[b"window"] == 7 and 0 < info[b"ttl"] <= 90_000
        assert await call(client, "clear_conversation", session="s") == {
            "session": "s", "deleted": True}
        assert (await call(client, "read_turns", session="s"))["turns"] == []

        # working notes, with the default note TTL
        await call(client, "write_note", session="s", key="plan", value="fix the bug")
        assert 0 < raw.execute_command("AMEM.WORK.TTL", "s", "plan") <= 60_000
        await call(client, "write_note", session="s", key="branch", value="main", ttl_seconds=0)
        assert raw.execute_command("AMEM.WORK.TTL", "s", "branch") == -1
        assert (await call(client, "read_notes", session="s", key="plan"))["value"] == "fix the bug"
        assert (await call(client, "read_notes", session="s"))["notes"] == {
            "plan": "fix the bug", "branch": "main"}
        assert (await call(client, "delete_note", session="s", key="plan"))["deleted"] is True
        assert (await call(client, "read_notes", session="s", key="plan"))["value"] is None

        # event log
        first = (await call(client, "log_event", agent="dev", type="action", text="ran tests"))["id"]
        await call(client, "log_event", agent="dev", type="decision", text="use hotkv")
        events = (await call(client, "query_events", agent="dev"))["events"]
        assert [e["text"] for e in events] == ["use hotkv", "ran tests"]
        events = (await call(client, "query_events", agent="dev", type="action",
                             newest_first=False))["events"]
        assert [e["id"] for e in events] == [first]

        # rolling summary
        assert (await call(client, "read_summary", agent="dev"))["summary"] is None
        assert (await call(client, "write_summary", agent="dev", text="Set up.",
                           if_version=0))["version"] == 1
        assert (await call(client, "append_summary", agent="dev", line="Tests pass."))["version"] == 2
        summary = (await call(client, "read_summary", agent="dev"))["summary"]
        assert summary["text"] == "Set up.\nTests pass." and summary["version"] == 2
        error = await call_error(client, "write_summary", agent="dev", text="x", if_version=1)
        assert "CONFLICT" in error and "version 2" in error

        # semantic memory without embeddings: the server's embedder (wordllama) finds the
        # fact by meaning
        for fid, text in [("style", "the user prefers tabs over spaces in python code"),
                          ("deploy", "deployments happen on friday afternoons"),
                          ("db", "the database is postgres version sixteen")]:
            stored = await call(client, "store_fact", namespace="proj", id=fid, text=text,
                                kind="preference" if fid == "style" else "fact", source="chat")
            assert stored == {"namespace": "proj", "id": fid, "created": True}
        assert (await call(client, "store_fact", namespace="proj", id="db",
                           text="the database is postgres version seventeen"))["created"] is False
        recalled = await call(client, "recall_facts", namespace="proj",
                              query="which database version do we use", k=2)
        assert recalled["matched_by"] == "meaning"  # the namespace was made with EMBEDDER
        assert recalled["facts"][0]["id"] == "db"
        assert recalled["facts"][0]["similarity"] > recalled["facts"][1]["similarity"]
        assert raw.execute_command("AMEM.SEM.INFO", "proj")[b"embedder"] == b"wordllama"
        assert recalled["facts"][0]["text"].endswith("seventeen")
        assert "vector" not in recalled["facts"][0]
        only = await call(client, "recall_facts", namespace="proj", query="tabs python",
                          kind="preference")
        assert [f["id"] for f in only["facts"]] == ["style"]
        page = await call(client, "list_facts", namespace="proj", count=2)
        assert [f["id"] for f in page["facts"]] == ["db", "deploy"] and page["cursor"] != "0"
        rest = await call(client, "list_facts", namespace="proj", cursor=page["cursor"])
        assert [f["id"] for f in rest["facts"]] == ["style"] and rest["cursor"] == "0"
        assert (await call(client, "forget_fact", namespace="proj", id="deploy"))["deleted"] is True
        assert (await call(client, "forget_fact", namespace="proj", id="deploy"))["deleted"] is False
        # a namespace nothing was stored in: no facts, by text and by embedding
        for how in ({}, {"embedding": [1.0, 0.0]}):
            nothing = await call(client, "recall_facts", namespace="nothing", query="x", **how)
            assert nothing["facts"] == []

        # with the assistant's own embeddings
        await call(client, "store_fact", namespace="vec", id="a", text="alpha",
                   embedding=[1.0, 0.0, 0.0])
        await call(client, "store_fact", namespace="vec", id="b", text="beta",
                   embedding=[0.0, 1.0, 0.0])
        by_vector = await call(client, "recall_facts", namespace="vec", query="",
                               embedding=[0.1, 0.9, 0.0], k=1)
        assert by_vector["matched_by"] == "embedding" and by_vector["facts"][0]["id"] == "b"
        assert by_vector["facts"][0]["similarity"] > 0.9

        # discovery
        assert (await call(client, "list_ids", store="notes"))["ids"] == ["s"]
        assert (await call(client, "list_ids", store="facts"))["ids"] == ["proj", "vec"]
        assert (await call(client, "list_ids", store="events"))["ids"] == ["dev"]
        assert (await call(client, "list_ids", store="summaries"))["ids"] == ["dev"]

        # bad arguments are tool errors, and the server keeps serving
        assert "session" in await call_error(client, "read_turns", session="")
        await call_error(client, "append_turn", session="s", role="narrator", content="x")
        assert (await call(client, "read_notes", session="s"))["notes"] == {"branch": "main"}

    with_mcp(server, "--window", "7", "--ttl", "90", "--notes-ttl", "60")(body)


def test_read_only_mode_refuses_writes(server: HotkvProcess, raw: redis.Redis) -> None:
    raw.execute_command("AMEM.CONV.CREATE", "s")
    raw.execute_command("AMEM.CONV.APPEND", "s", "user", "kept")

    async def body(client: Client) -> None:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names == READ_TOOLS
        for tool, arguments in [("append_turn", {"session": "s", "role": "user", "content": "x"}),
                                ("clear_conversation", {"session": "s"}),
                                ("write_note", {"session": "s", "key": "k", "value": "v"}),
                                ("store_fact", {"namespace": "n", "id": "i", "text": "t"}),
                                ("log_event", {"agent": "a", "type": "action", "text": "t"}),
                                ("write_summary", {"agent": "a", "text": "t"})]:
            result = await client.call_tool(tool, arguments)
            assert result.is_error, tool
        turns = (await call(client, "read_turns", session="s"))["turns"]
        assert [t["content"] for t in turns] == ["kept"]
        assert "read-only" in (client.instructions or "")

    with_mcp(server, "--read-only")(body)
    assert raw.execute_command("AMEM.CONV.LEN", "s") == 1
    assert raw.execute_command("AMEM.SCAN", 0, "TYPE", "work")[1] == []
    assert raw.execute_command("AMEM.SCAN", 0, "TYPE", "sem")[1] == []
    assert raw.execute_command("AMEM.SCAN", 0, "TYPE", "epis")[1] == []


def test_prefix_keeps_two_assistants_apart(server: HotkvProcess, raw: redis.Redis) -> None:
    raw.execute_command("AMEM.WORK.SET", "s", "secret", "outside any prefix")

    def assistant(prefix: str, note: str) -> Callable[[Client], Awaitable[None]]:
        async def body(client: Client) -> None:
            await call(client, "append_turn", session="s", role="user", content=note)
            await call(client, "write_note", session="s", key="note", value=note)
            await call(client, "log_event", agent="me", type="action", text=note)
            await call(client, "append_summary", agent="me", line=note)
            await call(client, "store_fact", namespace="kb", id="f", text=note)
            turns = (await call(client, "read_turns", session="s"))["turns"]
            assert [t["content"] for t in turns] == [note]
            assert (await call(client, "read_notes", session="s"))["notes"] == {"note": note}
            for store in ("conversations", "notes", "events", "summaries", "facts"):
                ids = (await call(client, "list_ids", store=store))["ids"]
                assert ids == (["kb"] if store == "facts" else ["me"] if store in (
                    "events", "summaries") else ["s"]), (prefix, store, ids)
            facts = (await call(client, "recall_facts", namespace="kb", query=note))["facts"]
            assert [f["text"] for f in facts] == [note]
            # ids that look like another tenant's stay inside this one
            assert (await call(client, "read_notes", session="bob:s" if prefix == "alice"
                                else "alice:s"))["notes"] == {}
        return body

    with_mcp(server, "--prefix", "alice")(assistant("alice", "alice was here"))
    with_mcp(server, "--prefix", "bob:")(assistant("bob", "bob was here"))
    conv_ids = raw.execute_command("AMEM.SCAN", 0, "TYPE", "conv", "COUNT", 100)[1]
    assert sorted(conv_ids) == [b"alice:s", b"bob:s"]
    assert raw.execute_command("AMEM.WORK.GET", "alice:s", "note") == b"alice was here"
    assert raw.execute_command("AMEM.WORK.GET", "bob:s", "note") == b"bob was here"
    assert raw.execute_command("AMEM.WORK.GET", "s", "secret") == b"outside any prefix"


def test_streamable_http_transport(server: HotkvProcess, raw: redis.Redis) -> None:
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), HOTKV_URL=f"redis://127.0.0.1:{server.port}",
               HOTKV_MCP_TRANSPORT="http", HOTKV_MCP_PORT=str(port), HOTKV_MCP_PREFIX="web")
    proc = subprocess.Popen([sys.executable, "-m", "hotkv_server.clients.mcp_server"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        async def main() -> None:
            deadline = time.monotonic() + 20
            while True:
                try:
                    async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                        await call(client, "write_note", session="s", key="k", value="over http")
                        notes = await call(client, "read_notes", session="s")
                        assert notes["notes"] == {"k": "over http"}
                        return
                except Exception as exc:  # not listening yet (or a real failure: retried until the deadline)
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise AssertionError(f"hotkv-mcp over HTTP failed: {exc!r}") from exc
                    await asyncio.sleep(0.2)

        asyncio.run(main())
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stderr:
            proc.stderr.close()
    assert raw.execute_command("AMEM.WORK.GET", "web:s", "k") == b"over http"


def test_config_from_flags_and_environment() -> None:
    assert parse_config([], environ={}) == McpConfig()
    env = {"HOTKV_URL": "redis://h:1", "HOTKV_MCP_PREFIX": "t:", "HOTKV_MCP_READ_ONLY": "yes",
           "HOTKV_MCP_WINDOW": "9", "HOTKV_MCP_TTL": "0", "HOTKV_MCP_TRANSPORT": "http"}
    config = parse_config([], environ=env)
    assert (config.url, config.prefix, config.read_only, config.window, config.ttl,
            config.transport) == ("redis://h:1", "t", True, 9, 0, "http")
    config = parse_config(["--window", "3", "--prefix", "x", "--url", "hotkv://o:2"], environ=env)
    assert (config.window, config.prefix, config.url) == (3, "x", "hotkv://o:2")
    with pytest.raises(SystemExit):
        parse_config(["--window", "0"], environ={})
    with pytest.raises(SystemExit):
        parse_config(["--ttl", "-1"], environ={})


def test_console_script_is_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["hotkv-memory-mcp"] == "hotkv_server.clients.mcp_server:main"
    # the official hotkv-mcp package owns the name ``hotkv-mcp``; both install in one venv
    assert "hotkv-mcp" not in project["scripts"]
    assert "hotkv-mcp==1.0.0" in project["optional-dependencies"]["test"]
    assert any(dep.startswith("mcp") for dep in project["optional-dependencies"]["mcp"])


def test_errors_speak_in_the_assistants_terms(server: HotkvProcess, raw: redis.Redis) -> None:
    """A server error reaches the assistant without the hidden prefix and without advice to
    run server commands it has no tool for."""

    async def body(client: Client) -> None:
        assert (await call(client, "write_summary", agent="bot", text="one"))["version"] == 1
        error = await call_error(client, "write_summary", agent="bot", text="two", if_version=5)
        assert error.endswith(": CONFLICT summary of 'bot' is at version 1")
        assert "assistant-a" not in error

    with_mcp(server, "--prefix", "assistant-a")(body)
    assert raw.execute_command("AMEM.SUMMARY.GET", "assistant-a:bot")[0] == b"one"
    config = McpConfig(prefix="assistant-a")
    assert assistant_message(
        "NOTFOUND no semantic namespace 'assistant-a:kb'; create it with AMEM.SEM.CREATE",
        config) == "NOTFOUND no semantic namespace 'kb'"
    assert assistant_message(
        "EXISTS conversation 'assistant-a:s' already exists; add UPDATE to change its settings",
        config) == "EXISTS conversation 's' already exists"
