"""The official HotKV MCP server (hotkv-mcp 1.0.0, unchanged) over stdio against a real hotkv
server: every memory tool and every key tool, through the MCP SDK's client, as an assistant
runs it. The package comes with the test extra; the server is its own ``hotkv-mcp`` program.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from helpers import HotkvProcess

MEMORY_TOOLS = {
    "memory_append_message", "memory_get_messages", "memory_clear_messages", "memory_set_note",
    "memory_get_note", "memory_list_notes", "memory_log_event", "memory_query_events",
    "memory_set_summary", "memory_get_summary",
}
KEY_TOOLS = {"server_info", "get", "set", "delete", "key_info", "scan"}


def _official_script() -> str:
    """The official package's console script, from the venv that runs the tests."""
    import sys

    script = Path(sys.executable).parent / "hotkv-mcp"
    found = str(script) if script.exists() else shutil.which("hotkv-mcp")
    assert found, "hotkv-mcp (the official package) is not installed: see the test extra"
    return found


def run_mcp(server: HotkvProcess, body: Callable[[Client], Awaitable[None]], *flags: str) -> None:
    params = StdioServerParameters(
        command=_official_script(),
        args=["--url", f"hotkv://127.0.0.1:{server.port}", *flags],
    )

    async def main() -> None:
        async with Client(params) as client:
            await body(client)

    asyncio.run(main())


async def call(client: Client, tool: str, **arguments: Any) -> Any:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool} failed: {result.content}"
    if result.structured_content is not None:
        content = result.structured_content
        # FastMCP wraps a non-object return value as {"result": ...}
        return content.get("result", content) if set(content) == {"result"} else content
    return json.loads(result.content[0].text)  # type: ignore[union-attr]


@pytest.fixture
def raw(server: HotkvProcess) -> redis.Redis:
    client = server.client(protocol=3)
    client.flushall()
    return client


def test_the_official_server_offers_its_memory_and_key_tools(server: HotkvProcess,
                                                             raw: redis.Redis) -> None:
    async def body(client: Client) -> None:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names >= MEMORY_TOOLS | KEY_TOOLS

    run_mcp(server, body)


def test_conversation_tools(server: HotkvProcess, raw: redis.Redis) -> None:
    async def body(client: Client) -> None:
        # a new session: the append fails with "session not found", the server creates it
        assert await call(client, "memory_append_message", session="s1", role="user",
                          content="My invoice is wrong.") is True
        assert await call(client, "memory_append_message", session="s1", role="assistant",
                          content="Let me look.") is True
        messages = await call(client, "memory_get_messages", session="s1")
        assert [(m["role"], m["content"]) for m in messages] == [
            ("user", "My invoice is wrong."), ("assistant", "Let me look.")]
        last = await call(client, "memory_get_messages", session="s1", last=1)
        assert [m["content"] for m in last] == ["Let me look."]
        assert await call(client, "memory_clear_messages", session="s1") is True
        assert await call(client, "memory_get_messages", session="s1") == []
        assert await call(client, "memory_clear_messages", session="s1") is False

    run_mcp(server, body)
    assert raw.execute_command("AMEM.CONV.LEN", "s1") == 0  # cleared, still there
    assert raw.execute_command("AMEM.CONV.INFO", "s1") is not None


def test_note_tools(server: HotkvProcess, raw: redis.Redis) -> None:
    async def body(client: Client) -> None:
        assert await call(client, "memory_set_note", session="s2", key="ticket",
                          value="INV-1932") is True
        assert await call(client, "memory_set_note", session="s2", key="plan", value="refund") is True
        assert await call(client, "memory_get_note", session="s2", key="ticket") == "INV-1932"
        assert await call(client, "memory_get_note", session="s2", key="nope") is None
        assert sorted(await call(client, "memory_list_notes", session="s2")) == ["plan", "ticket"]

    run_mcp(server, body)
    assert raw.execute_command("AMEM.WORK.GET", "s2", "plan") == b"refund"


def test_event_tools(server: HotkvProcess, raw: redis.Redis) -> None:
    before = int(time.time() * 1000)

    async def body(client: Client) -> None:
        assert await call(client, "memory_log_event", agent="bot", event_type="decision",
                          content="refund it") is True
        assert await call(client, "memory_log_event", agent="bot", event_type="action",
                          content="refunded", metadata="amount=12") is True
        events = await call(client, "memory_query_events", agent="bot")
        assert [(e["type"], e["text"]) for e in events] == [("decision", "refund it"),
                                                             ("action", "refunded")]
        assert all(before <= e["timestamp"] <= int(time.time() * 1000) for e in events)
        only = await call(client, "memory_query_events", agent="bot", event_type="action", limit=5)
        assert [e["text"] for e in only] == ["refunded"]
        assert only[0]["meta"] == "amount=12"

    run_mcp(server, body)


def test_summary_tools(server: HotkvProcess, raw: redis.Redis) -> None:
    async def body(client: Client) -> None:
        assert await call(client, "memory_get_summary", agent="bot") is None
        assert await call(client, "memory_set_summary", agent="bot", summary="Refund asked.") == 1
        assert await call(client, "memory_set_summary", agent="bot", summary="Refund done.",
                          append=True) == 2
        got = await call(client, "memory_get_summary", agent="bot")
        assert got["summary"] == "Refund asked.\nRefund done."
        assert got["version"] == 2
        assert abs(got["updated_unix"] - time.time()) < 60  # seconds

    run_mcp(server, body)


def test_key_tools(server: HotkvProcess, raw: redis.Redis) -> None:
    async def body(client: Client) -> None:
        assert await call(client, "set", key="greeting", value="hello", ttl_seconds=100) is True
        assert await call(client, "set", key="greeting", value="again", only_if_missing=True) is False
        assert await call(client, "get", key="greeting") == "hello"
        assert await call(client, "get", key="nope") is None
        info = await call(client, "key_info", key="greeting")
        assert info["exists"] is True and info["type"] == "string"
        assert 0 < info["ttl_seconds"] <= 100
        assert await call(client, "key_info", key="nope") == {"exists": False}
        await call(client, "set", key="other", value="x")
        seen: list[str] = []
        cursor = 0
        while True:
            page = await call(client, "scan", pattern="*", cursor=cursor, limit=1)
            seen += page["keys"]
            cursor = page["next_cursor"]
            if cursor == 0:
                break
        assert sorted(seen) == ["greeting", "other"]
        assert await call(client, "delete", key="greeting") is True
        assert await call(client, "delete", key="greeting") is False
        status = await call(client, "server_info")
        assert status["keys"] == 1
        assert status["info"]["role"] == "master"

    run_mcp(server, body)


def test_a_namespace_confines_the_memory_tools(server: HotkvProcess, raw: redis.Redis) -> None:
    async def body(client: Client) -> None:
        assert await call(client, "memory_append_message", session="s", role="user",
                          content="hi") is True
        assert await call(client, "memory_set_note", session="s", key="k", value="v") is True
        assert await call(client, "memory_list_notes", session="s") == ["k"]

    run_mcp(server, body, "--namespace", "team-a")
    assert raw.execute_command("AMEM.CONV.LEN", "team-a:s") == 1
    assert raw.execute_command("AMEM.CONV.LEN", "s") == 0
