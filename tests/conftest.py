"""Shared fixtures: a real hotkv-server per test module, and clients in RESP2 and RESP3."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from helpers import HotkvProcess, RawConnection, RedisServer


@pytest.fixture(scope="module")
def server() -> Iterator[HotkvProcess]:
    proc = HotkvProcess().start()
    try:
        yield proc
    finally:
        proc.cleanup()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def r(request: pytest.FixtureRequest, server: HotkvProcess) -> Iterator[redis.Redis]:
    client = server.client(protocol=request.param)
    client.execute_command("FLUSHALL")
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="module")
def reference() -> Iterator[RedisServer]:
    """A real redis-server on a free port, shared per test module (differential tests)."""
    ref = RedisServer()
    try:
        yield ref
    finally:
        ref.stop()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def raw_pair(request: pytest.FixtureRequest, server: HotkvProcess,
             reference: RedisServer) -> Iterator[tuple[RawConnection, RawConnection]]:
    """Byte-level connections to hotkv and to redis-server in one protocol, both flushed."""
    hot = RawConnection(server.port, request.param)
    ref = RawConnection(reference.port, request.param)
    hot.call("FLUSHALL")
    ref.call("FLUSHALL")
    try:
        yield hot, ref
    finally:
        hot.close()
        ref.close()
