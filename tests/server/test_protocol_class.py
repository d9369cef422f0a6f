"""``ClientProtocol`` driven directly with a fake transport (as uvicorn tests its protocol
classes): framing across reads, inline and multibulk requests in one read, one write per
read, the flow control's pause reasons, a deferred reply holding the requests behind it,
and a protocol error. No sockets: what the protocol writes and asks of the transport is
recorded and checked."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from hotkv_server.commands import load_all
from hotkv_server.engine.config import load_config
from hotkv_server.engine.core import Core
from hotkv_server.server.connection import ClientProtocol
from hotkv_server.server.flow import DEFERRED, HELD, OUTPUT


class FakeTransport:
    """Records writes and the reading switches; its write buffer size is set by the test."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.calls: list[str] = []
        self.buffered = 0
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def get_extra_info(self, name: str) -> Any:
        return ("127.0.0.1", 40000) if name in ("peername", "sockname") else None

    def set_write_buffer_limits(self, high: int) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return self.buffered

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True
        self.calls.append("close")

    def abort(self) -> None:
        self.closed = True
        self.calls.append("abort")

    def pause_reading(self) -> None:
        self.calls.append("pause")

    def resume_reading(self) -> None:
        self.calls.append("resume")


def request(*words: bytes) -> bytes:
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%b\r\n" % (len(w), w) for w in words)


@pytest.fixture
def core() -> Core:
    load_all()
    return Core(load_config(["--port", "0", "--save", "", "--appendonly", "no"]))


def connect(core: Core) -> tuple[ClientProtocol, FakeTransport]:
    protocol = ClientProtocol(core)
    transport = FakeTransport()
    protocol.connection_made(transport)  # type: ignore[arg-type]
    return protocol, transport


def test_pipelined_requests_are_answered_in_one_write(core: Core) -> None:
    protocol, transport = connect(core)
    protocol.data_received(request(b"SET", b"k", b"v") + request(b"GET", b"k") + b"PING\r\n")
    assert transport.writes == [b"+OK\r\n$1\r\nv\r\n+PONG\r\n"]


def test_inline_then_multibulk_in_one_read(core: Core) -> None:
    protocol, transport = connect(core)
    protocol.data_received(b"SET a 1\r\n" + request(b"GET", b"a") + b"ECHO 'two words'\r\n")
    assert transport.writes == [b"+OK\r\n$1\r\n1\r\n$9\r\ntwo words\r\n"]


def test_a_request_split_across_reads_is_answered_once_complete(core: Core) -> None:
    protocol, transport = connect(core)
    whole = request(b"SET", b"key", b"x" * 100) + request(b"STRLEN", b"key")
    for i in range(0, len(whole), 7):
        protocol.data_received(whole[i:i + 7])
    assert b"".join(transport.writes) == b"+OK\r\n:100\r\n"


def test_output_backing_up_pauses_reading_until_it_drains(core: Core) -> None:
    protocol, transport = connect(core)
    protocol.pause_writing()
    protocol.pause_writing()  # asyncio may say it again: still one pause
    assert transport.calls == ["pause"] and OUTPUT in protocol.flow
    protocol.resume_writing()
    assert transport.calls == ["pause", "resume"] and not protocol.flow.reasons


def test_a_deferred_reply_holds_later_requests(core: Core) -> None:
    async def run() -> None:
        waiter, wt = connect(core)
        pusher, pt = connect(core)
        waiter.data_received(request(b"BLPOP", b"q", b"0") + b"PING\r\n")
        assert wt.writes == []  # nothing yet: the PING waits behind the blocked pop
        # a blocked pop reads on (to see its client close), so it is no reason to pause
        assert waiter.ctx is not None and waiter.ctx.blocked and not waiter.flow.reasons
        waiter.pause_writing()  # the output backs up meanwhile
        assert wt.calls == ["pause"]
        pusher.data_received(request(b"LPUSH", b"q", b"x"))
        assert pt.writes == [b":1\r\n"]
        for _ in range(3):
            await asyncio.sleep(0)
        # the pop's reply, then the held PING, in one write; reading stays paused: the
        # output reason still holds
        assert wt.writes == [b"*2\r\n$1\r\nq\r\n$1\r\nx\r\n+PONG\r\n"]
        assert waiter.flow.reasons == {OUTPUT} and wt.calls == ["pause"]
        waiter.resume_writing()
        assert wt.calls == ["pause", "resume"] and not waiter.flow.reasons

    asyncio.run(run())


def test_held_reason_is_released_with_the_deferred_one(core: Core) -> None:
    protocol, transport = connect(core)
    protocol.flow.pause(DEFERRED)
    protocol.flow.pause(HELD)
    protocol.flow.resume(DEFERRED)
    assert transport.calls == ["pause"] and protocol.flow.reasons == {HELD}
    protocol.flow.resume(HELD)
    assert transport.calls == ["pause", "resume"]


def test_a_protocol_error_is_answered_then_the_connection_closes(core: Core) -> None:
    protocol, transport = connect(core)
    protocol.data_received(b"PING\r\n*1\r\n$x\r\n")
    assert transport.writes[0].startswith(b"+PONG\r\n-ERR Protocol error")
    assert "close" in transport.calls
    protocol.data_received(b"PING\r\n")  # nothing more is read
    assert len(transport.writes) == 1


def test_a_closed_connection_leaves_its_subsystems_told(core: Core) -> None:
    protocol, _transport = connect(core)
    ctx = protocol.ctx
    assert ctx is not None and ctx.id in core.clients
    protocol.connection_lost(None)
    assert ctx.id not in core.clients and protocol.closed
