"""``ClientProtocol`` driven directly with a fake transport (as uvicorn tests its protocol
classes): framing across reads, inline and multibulk requests in one read, one write per
read, the flow control's pause reasons, a deferred reply holding the requests behind it,
and a protocol error. No sockets: what the protocol writes and asks of the transport is
recorded and checked."""

from __future__ import annotations

import asyncio

import pytest

from hotkv_server.commands import load_all
from hotkv_server.engine.config import load_config
from hotkv_server.engine.core import Core
from hotkv_server.server.connection import ClientProtocol
from hotkv_server.server.flow import DEFERRED, HELD, OUTPUT
from server.fakes import FakeTransport, request


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


#: a pipeline of multibulk and inline requests, and the replies it gets, byte for byte
PIPELINE = (request(b"SET", b"key", b"v" * 30) + b"PING\r\n" + request(b"GET", b"key")
            + b'ECHO "a b"\r\n' + request(b"DEL", b"key") + b"EXISTS key\n"
            + request(b"ECHO", b"x\r\ny"))
REPLIES = (b"+OK\r\n+PONG\r\n$30\r\n" + b"v" * 30 + b"\r\n$3\r\na b\r\n:1\r\n:0\r\n"
           b"$4\r\nx\r\ny\r\n")


def test_a_pipeline_cut_at_every_byte_is_answered_the_same(core: Core) -> None:
    for cut in range(1, len(PIPELINE)):
        protocol, transport = connect(core)
        protocol.data_received(PIPELINE[:cut])
        protocol.data_received(PIPELINE[cut:])
        assert b"".join(transport.writes) == REPLIES, cut
        assert len(transport.writes) <= 2 and "close" not in transport.calls


def test_a_pipeline_read_byte_by_byte(core: Core) -> None:
    protocol, transport = connect(core)
    for i in range(len(PIPELINE)):
        protocol.data_received(PIPELINE[i:i + 1])
    assert b"".join(transport.writes) == REPLIES


def test_inline_commands_alone(core: Core) -> None:
    protocol, transport = connect(core)
    protocol.data_received(b"SET a 'one two'\r\nGET a\nAPPEND a \"\\x21\"\r\n\r\n   \r\nGET a\r\n")
    assert transport.writes == [b"+OK\r\n$7\r\none two\r\n:8\r\n$8\r\none two!\r\n"]


def test_an_inline_request_cut_in_two_reads(core: Core) -> None:
    protocol, transport = connect(core)
    protocol.data_received(b"ECHO hel")
    assert transport.writes == []
    protocol.data_received(b"lo\r\n")
    assert transport.writes == [b"$5\r\nhello\r\n"]


def test_a_protocol_error_in_a_later_read_closes_after_its_reply(core: Core) -> None:
    protocol, transport = connect(core)
    protocol.data_received(request(b"PING") + b"*2\r\n$4\r\nECHO\r\n")
    assert transport.writes == [b"+PONG\r\n"]
    protocol.data_received(b"$3\r\nab")  # fine so far: the value is incomplete
    protocol.data_received(b"c\r\n*1\r\n:7\r\n")
    assert transport.writes == [b"+PONG\r\n", b"$3\r\nabc\r\n-ERR Protocol error: expected '$', got ':'\r\n"]
    assert transport.calls == ["close"]


def test_a_protocol_error_behind_a_deferred_reply_waits_for_it(core: Core) -> None:
    async def run() -> None:
        waiter, wt = connect(core)
        pusher, _ = connect(core)
        waiter.data_received(request(b"BLPOP", b"q", b"0") + b"PING\r\n" + b'ECHO "open\r\n')
        waiter.data_received(b"PING\r\n")  # after the error: never read
        assert wt.writes == [] and "close" not in wt.calls
        pusher.data_received(request(b"RPUSH", b"q", b"x"))
        for _ in range(3):
            await asyncio.sleep(0)
        assert wt.writes == [b"*2\r\n$1\r\nq\r\n$1\r\nx\r\n+PONG\r\n"
                             b"-ERR Protocol error: unbalanced quotes in request\r\n"]
        assert wt.calls == ["close"]

    asyncio.run(run())


def test_too_many_requests_held_pause_reading_until_the_reply(core: Core) -> None:
    from hotkv_server.server.connection import MAX_HELD

    async def run() -> None:
        waiter, wt = connect(core)
        pusher, _ = connect(core)
        waiter.data_received(request(b"BLPOP", b"q", b"0"))
        assert not waiter.flow.reasons  # a blocked pop reads on (to see its client go)
        waiter.data_received(b"PING\r\n" * (MAX_HELD - 1))
        assert not waiter.flow.reasons and wt.calls == []
        waiter.data_received(b"PING\r\n")
        assert waiter.flow.reasons == {HELD} and wt.calls == ["pause"]
        pusher.data_received(request(b"RPUSH", b"q", b"x"))
        for _ in range(3):
            await asyncio.sleep(0)
        assert wt.writes == [b"*2\r\n$1\r\nq\r\n$1\r\nx\r\n" + b"+PONG\r\n" * MAX_HELD]
        assert wt.calls == ["pause", "resume"] and not waiter.flow.reasons and not waiter.held

    asyncio.run(run())


def test_a_held_request_that_blocks_again_keeps_the_rest_held(core: Core) -> None:
    async def run() -> None:
        waiter, wt = connect(core)
        pusher, _ = connect(core)
        waiter.data_received(request(b"BLPOP", b"a", b"0") + request(b"BLPOP", b"b", b"0")
                             + b"ECHO last\r\n")
        pusher.data_received(request(b"RPUSH", b"a", b"1"))
        for _ in range(3):
            await asyncio.sleep(0)
        assert wt.writes == [b"*2\r\n$1\r\na\r\n$1\r\n1\r\n"]  # the second pop waits now
        assert len(waiter.held) == 1
        pusher.data_received(request(b"RPUSH", b"b", b"2"))
        for _ in range(3):
            await asyncio.sleep(0)
        assert wt.writes[1:] == [b"*2\r\n$1\r\nb\r\n$1\r\n2\r\n$4\r\nlast\r\n"]

    asyncio.run(run())


def test_replies_follow_the_protocol_the_client_switched_to(core: Core) -> None:
    protocol, transport = connect(core)
    protocol.data_received(request(b"HSET", b"h", b"f", b"v") + request(b"HELLO", b"3")
                           + request(b"HGETALL", b"h"))
    joined = b"".join(transport.writes)
    assert joined.startswith(b":1\r\n%") and joined.endswith(b"%1\r\n$1\r\nf\r\n$1\r\nv\r\n")


def test_the_peer_and_local_addresses_come_from_the_transport(core: Core) -> None:
    protocol, transport = connect(core)
    assert {"peername", "sockname"} <= set(transport.asked)
    protocol.data_received(request(b"CLIENT", b"INFO"))
    info = transport.writes[-1]
    assert b"addr=127.0.0.1:40000 " in info and b"laddr=127.0.0.1:6379 " in info


def test_a_client_that_stops_reading_pauses_the_reading_of_its_requests(core: Core) -> None:
    """asyncio says the output backed up (pause_writing): reading stops whatever else holds,
    and a deferred reply resolving meanwhile does not resume it."""
    async def run() -> None:
        waiter, wt = connect(core)
        pusher, _ = connect(core)
        waiter.data_received(request(b"BLPOP", b"q", b"0"))
        waiter.pause_writing()
        assert waiter.flow.reasons == {OUTPUT} and wt.calls == ["pause"]
        pusher.data_received(request(b"RPUSH", b"q", b"x"))
        for _ in range(3):
            await asyncio.sleep(0)
        assert wt.writes and waiter.flow.reasons == {OUTPUT} and wt.calls == ["pause"]
        waiter.resume_writing()
        assert wt.calls == ["pause", "resume"]

    asyncio.run(run())
