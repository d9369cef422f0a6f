"""The official HotKV MCP server's hash and list tools (hotkv-mcp 1.0.0, unchanged) over stdio
against a real hotkv-server: hash_set / hash_get and list_push / list_range, through the MCP
SDK's client as an assistant calls them, with the data checked through redis-py.

The official server runs as ``python -m hotkv_mcp`` from the venv of the tests (the test
extra installs the package), so this does not depend on which program owns the
``hotkv-mcp`` name.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import redis
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from helpers import HotkvProcess


def run_official_mcp(server: HotkvProcess, body: Callable[[Client], Awaitable[None]],
                     *flags: str) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hotkv_mcp", "--url", f"hotkv://127.0.0.1:{server.port}", *flags],
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
        return content.get("result", content) if set(content) == {"result"} else content
    if not result.content:
        return None
    text = result.content[0].text  # type: ignore[union-attr]
    try:
        return json.loads(text)
    except ValueError:  # a bare string result comes as its text
        return text


async def call_error(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} should have failed: {result.content}"
    return " ".join(getattr(part, "text", "") for part in result.content)


@pytest.fixture
def raw(server: HotkvProcess) -> redis.Redis:
    client = server.client(protocol=3)
    client.flushall()
    return client


def test_hash_tools(server: HotkvProcess, raw: redis.Redis) -> None:
    async def body(client: Client) -> None:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"hash_get", "hash_set", "list_range", "list_push"} <= names
        assert await call(client, "hash_set", key="user:1", fields={"name": "Ada", "lang": "en"}) == 2
        assert await call(client, "hash_set", key="user:1", fields={"lang": "fr", "tz": "CET"}) == 1
        assert await call(client, "hash_get", key="user:1", field="lang") == "fr"
        assert await call(client, "hash_get", key="user:1") == {
            "name": "Ada", "lang": "fr", "tz": "CET"}
        assert await call(client, "hash_get", key="user:1", field="missing") is None
        raw.set("plain", "x")
        refused = await call_error(client, "hash_set", key="plain", fields={"a": "1"})
        assert "wrong kind of value" in refused

    run_official_mcp(server, body)
    assert raw.hgetall("user:1") == {b"name": b"Ada", b"lang": b"fr", b"tz": b"CET"}
    assert raw.type("user:1") == b"hash"


def test_list_tools(server: HotkvProcess, raw: redis.Redis) -> None:
    async def body(client: Client) -> None:
        assert await call(client, "list_push", key="queue", values=["a", "b"]) == 2
        assert await call(client, "list_push", key="queue", values=["z"], at_head=True) == 3
        assert await call(client, "list_range", key="queue") == ["z", "a", "b"]
        assert await call(client, "list_range", key="queue", start=1, stop=-1) == ["a", "b"]
        assert await call(client, "list_range", key="queue", start=-1) == ["b"]
        assert await call(client, "list_range", key="nothing") == []

    run_official_mcp(server, body)
    assert raw.lrange("queue", 0, -1) == [b"z", b"a", b"b"]
    assert raw.type("queue") == b"list"


def test_a_namespace_confines_the_hash_and_list_tools(server: HotkvProcess,
                                                      raw: redis.Redis) -> None:
    async def body(client: Client) -> None:
        assert await call(client, "hash_set", key="h", fields={"f": "v"}) == 1
        assert await call(client, "list_push", key="l", values=["x"]) == 1
        assert await call(client, "hash_get", key="h", field="f") == "v"

    run_official_mcp(server, body, "--namespace", "tenant-a")
    assert raw.hget("tenant-a:h", "f") == b"v"
    assert raw.lrange("tenant-a:l", 0, -1) == [b"x"]
    assert not raw.exists("h", "l")
