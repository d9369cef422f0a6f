"""Unit tests of the replication building blocks: stream framing, backlog, saved state."""

from __future__ import annotations

import os

import pytest

from hotkv_server.persistence.framing import pack, unpack
from hotkv_server.replication import state
from hotkv_server.replication.backlog import Backlog
from hotkv_server.replication.stream import (
    GETACK,
    PING,
    CommandParser,
    StreamError,
    effect_command,
    encode_command,
)

RECORDS = [
    ["kv.set", b"key", b"\x00\xffvalue", 1_700_000_000_123],
    ["tx", [["conv.append", b"s", 3, "user", b"hi", 1, None, None], ["summary.set", b"a", b"t", 2, 5, None]]],
    ["flushall"],
    ["sem.store", b"ns", {"text": "caf\u00e9", "vec": b"\x00" * 16, "conf": 0.25}],
]


def test_effect_commands_round_trip_through_the_parser() -> None:
    stream = b"".join(effect_command(pack(r)) for r in RECORDS) + PING + GETACK
    parser = CommandParser()
    seen = []
    # one byte at a time: every split point of every command
    for i in range(len(stream)):
        parser.feed(stream[i : i + 1])
        while (item := parser.next()) is not None:
            seen.append(item)
    assert [raw for _, raw in seen][:4] == [effect_command(pack(r)) for r in RECORDS]
    assert b"".join(raw for _, raw in seen) == stream
    assert [unpack(argv[1]) for argv, _ in seen[:4]] == RECORDS
    assert seen[4][0] == [b"PING"] and seen[5][0] == [b"REPLCONF", b"GETACK", b"*"]
    assert parser.pending() == 0


def test_parser_keeps_what_follows() -> None:
    parser = CommandParser()
    parser.feed(encode_command(b"PING") + b"*2\r\n$3\r\nabc")
    assert parser.next() == ([b"PING"], PING)
    assert parser.next() is None
    assert parser.pending() == len(b"*2\r\n$3\r\nabc")
    assert parser.take_rest() == b"*2\r\n$3\r\nabc"


@pytest.mark.parametrize("bad", [b"+OK\r\n", b"*1\r\n:5\r\n", b"*x\r\n", b"*1\r\n$-3\r\n", b"*" + b"9" * 40])
def test_parser_rejects_what_a_primary_never_sends(bad: bytes) -> None:
    parser = CommandParser()
    parser.feed(bad)
    with pytest.raises(StreamError):
        parser.next()


@pytest.mark.parametrize(("bad", "message"), [
    (b"+OK\r\n", "expected '*' at the start of a command, got b'+'"),
    (b"*1\r\n:5\r\n", "expected '$' in a command, got b':'"),
    (b"*" + b"9" * 40, "command header too long"),
    (b"*1\r\n$" + b"9" * 40, "bulk header too long"),
    (b"*1\r\n$-3\r\n", "negative length -3"),
])
def test_parser_errors_say_what_was_expected(bad: bytes, message: str) -> None:
    parser = CommandParser()
    parser.feed(bad)
    with pytest.raises(StreamError) as exc:
        parser.next()
    assert str(exc.value) == message


def test_backlog_window_and_offsets() -> None:
    backlog = Backlog(16 * 1024, next_offset=101)  # 100 bytes of history before it existed
    assert (backlog.first, backlog.end, backlog.histlen) == (101, 101, 0)
    assert backlog.covers(101) and not backlog.covers(100) and not backlog.covers(102)
    backlog.append(b"a" * 10_000)
    backlog.append(b"b" * 10_000)
    assert backlog.histlen == 16 * 1024
    assert backlog.end == 101 + 20_000
    assert backlog.first == backlog.end - 16 * 1024
    assert not backlog.covers(backlog.first - 1) and backlog.covers(backlog.end)
    start = 101 + 10_000
    assert backlog.read_from(start) == b"b" * 10_000
    assert backlog.read_from(backlog.end) == b""
    backlog.resize(1)  # Redis's minimum size wins
    assert backlog.size == 16 * 1024


def test_backlog_shrinks_on_resize() -> None:
    backlog = Backlog(64 * 1024, next_offset=1)
    backlog.append(bytes(range(256)) * 200)  # 51200 bytes
    backlog.resize(20_000)
    assert backlog.histlen == 20_000 and backlog.end == 51_201
    assert backlog.read_from(backlog.first) == (bytes(range(256)) * 200)[-20_000:]


def test_saved_state_is_read_once(tmp_path: os.PathLike[str]) -> None:
    directory = str(tmp_path)
    assert state.take(directory) is None
    replid = "ab" * 20
    state.save(directory, replid, 12345)
    assert os.listdir(directory) == [state.FILENAME]
    assert state.take(directory) == (replid, 12345)
    assert state.take(directory) is None  # consumed: a later crash must not reuse it


@pytest.mark.parametrize("text", ["not json", '{"replid": "xyz", "offset": 1}', '{"replid": "' + "a" * 40 + '"}',
                                  '{"replid": "' + "a" * 40 + '", "offset": -5}', "[]"])
def test_a_bad_state_file_means_a_full_sync(tmp_path: os.PathLike[str], text: str) -> None:
    directory = str(tmp_path)
    with open(state.path_in(directory), "w", encoding="utf-8") as fh:
        fh.write(text)
    assert state.take(directory) is None
    assert not os.path.exists(state.path_in(directory))
