"""Deferred replies end their call through the dispatch point, as an immediate reply does.

In process: a real ``Server`` with its subsystems (replication for WAIT, the search
threads for VSIM), ``ClientProtocol`` objects on recording transports. A deferred call is
counted when its reply is known (Redis counts a blocked command when it is unblocked): its
command statistics, its error in errorstats and failed_calls, its slowlog entry. Its
duration runs until then for work done elsewhere (a search on the threads), and leaves out
an idle wait (a blocking pop, WAIT), as Redis times blocked commands. The dispatch point's
clock is moved by seven seconds while a reply is pending, so no assertion depends on how
fast this machine is.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from hotkv_server.engine import dispatch as dispatch_module
from hotkv_server.engine.core import Core
from hotkv_server.engine.registry import LOOKUP
from hotkv_server.server.connection import ClientProtocol
from hotkv_server.server.flow import DEFERRED
from server.fakes import FakeTransport, request, running_server

SEVEN_SECONDS_NS = 7_000_000_000


class Clock:
    """The dispatch point's wall clock, moved forward on demand."""

    def __init__(self) -> None:
        self.offset = 0

    def __call__(self) -> int:
        return time.time_ns() + self.offset


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(dispatch_module, "_time_ns", fake)
    return fake


def in_server(tmp_path: Path, body: Callable[[Core], Awaitable[None]]) -> None:
    async def run() -> None:
        async with running_server("--dir", str(tmp_path), "--save", "", "--appendonly", "no") as server:
            await body(server.core)

    asyncio.run(run())


def connect(core: Core) -> tuple[ClientProtocol, FakeTransport]:
    protocol = ClientProtocol(core)
    transport = FakeTransport()
    protocol.connection_made(transport)  # type: ignore[arg-type]
    return protocol, transport


async def answered(transport: FakeTransport, count: int = 1) -> None:
    """Run the loop until ``transport`` got ``count`` writes (the reply left)."""
    for _ in range(2000):
        if len(transport.writes) >= count:
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"no reply: {transport.writes}")


def stats(name: bytes) -> tuple[int, int, int, int]:
    spec = LOOKUP[name]
    return spec.calls, spec.failed_calls, spec.rejected_calls, spec.usec


def reset(*names: bytes) -> None:
    for name in names:
        spec = LOOKUP[name]
        spec.calls = spec.failed_calls = spec.rejected_calls = spec.usec = 0


def slowlog_names(core: Core) -> list[bytes]:
    return [entry.argv[0].upper() for entry in core.slowlog]


def test_wait_pauses_reading_and_is_counted_when_it_answers(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        reset(b"wait")
        client, transport = connect(core)
        client.data_received(request(b"WAIT", b"1", b"50") + b"PING\r\n")
        assert transport.writes == [] and client.flow.reasons == {DEFERRED}
        assert transport.calls == ["pause"]
        assert stats(b"wait")[0] == 0  # not counted while it waits
        await answered(transport)
        assert transport.writes == [b":0\r\n+PONG\r\n"]  # its reply, then the held PING
        assert transport.calls == ["pause", "resume"] and not client.flow.reasons
        calls, failed, rejected, _ = stats(b"wait")
        assert (calls, failed, rejected) == (1, 0, 0)

    in_server(tmp_path, body)


def test_a_search_on_the_threads_counts_its_time_until_the_reply(tmp_path: Path, clock: Clock) -> None:
    async def body(core: Core) -> None:
        client, transport = connect(core)
        for i in range(50):
            client.data_received(request(b"VADD", b"vs", b"VALUES", b"3", b"%d" % i, b"1", b"0.5",
                                         b"e%d" % i))
        client.data_received(request(b"CONFIG", b"SET", b"slowlog-log-slower-than", b"1000000"))
        transport.writes.clear()
        core.slowlog.clear()
        reset(b"vsim")
        client.data_received(request(b"VSIM", b"vs", b"ELE", b"e3", b"COUNT", b"1") + b"PING\r\n")
        assert client.deferred is not None, "VSIM should search on the threads"
        clock.offset += SEVEN_SECONDS_NS  # the search takes "seven seconds"
        await answered(transport)
        assert transport.writes == [b"*1\r\n$2\r\ne3\r\n+PONG\r\n"]
        calls, failed, _, usec = stats(b"vsim")
        assert calls == 1 and failed == 0 and usec >= SEVEN_SECONDS_NS // 1000
        assert slowlog_names(core) == [b"VSIM"]  # one entry, made when it answered
        # the same search in MULTI runs in place: counted the same way, at once
        client.data_received(request(b"MULTI") + request(b"VSIM", b"vs", b"ELE", b"e3",
                                                         b"COUNT", b"1") + request(b"EXEC"))
        assert stats(b"vsim")[:2] == (2, 0)

    in_server(tmp_path, body)


def test_a_blocking_pops_wait_is_not_its_duration(tmp_path: Path, clock: Clock) -> None:
    async def body(core: Core) -> None:
        waiter, wt = connect(core)
        pusher, _ = connect(core)
        pusher.data_received(request(b"CONFIG", b"SET", b"slowlog-log-slower-than", b"1000000"))
        core.slowlog.clear()
        reset(b"blpop")
        waiter.data_received(request(b"BLPOP", b"q", b"0"))
        assert stats(b"blpop")[0] == 0
        clock.offset += SEVEN_SECONDS_NS  # it waits "seven seconds" for a push
        pusher.data_received(request(b"RPUSH", b"q", b"x"))
        await answered(wt)
        assert wt.writes == [b"*2\r\n$1\r\nq\r\n$1\r\nx\r\n"]
        calls, failed, _, usec = stats(b"blpop")
        assert calls == 1 and failed == 0 and usec < SEVEN_SECONDS_NS // 1000
        assert b"BLPOP" not in slowlog_names(core)

    in_server(tmp_path, body)


def test_a_deferred_error_counts_as_an_immediate_one(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        waiter, wt = connect(core)
        other, ot = connect(core)
        assert waiter.ctx is not None
        reset(b"blpop", b"ping", b"lpop")
        errors_before = core.stats.total_error_replies
        unblocked_before = core.stats.errorstats.get("UNBLOCKED", 0)
        waiter.data_received(request(b"BLPOP", b"q", b"0"))
        other.data_received(request(b"CLIENT", b"UNBLOCK", b"%d" % waiter.ctx.id, b"ERROR"))
        await answered(wt)
        assert wt.writes == [b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"]
        assert core.stats.errorstats.get("UNBLOCKED", 0) == unblocked_before + 1
        assert core.stats.total_error_replies == errors_before + 1
        assert stats(b"blpop")[:3] == (1, 1, 0)
        # an immediate error counts the same: one error reply, one failed call
        other.data_received(request(b"LPOP", b"q", b"x"))
        assert core.stats.total_error_replies == errors_before + 2
        assert stats(b"lpop")[:3] == (1, 1, 0)
        # and neither makes the next command look failed
        other.data_received(request(b"PING"))
        assert stats(b"ping")[:2] == (1, 0)
        assert ot.writes[-1] == b"+PONG\r\n"

    in_server(tmp_path, body)


def test_the_commands_behind_a_deferred_reply_are_counted_once_each(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        client, transport = connect(core)
        reset(b"wait", b"incr", b"get")
        client.data_received(request(b"WAIT", b"1", b"20") + request(b"INCR", b"n")
                             + request(b"GET", b"n"))
        assert stats(b"incr")[0] == 0  # held, not run
        await answered(transport)
        assert transport.writes == [b":0\r\n:1\r\n$1\r\n1\r\n"]
        assert [stats(name)[:2] for name in (b"wait", b"incr", b"get")] == [(1, 0)] * 3

    in_server(tmp_path, body)

