"""Reply encoding (server/resp.py), checked against hiredis' parser: whatever a handler
returns, the bytes are one well-formed RESP2/RESP3 reply that reads back as the value.

The array paths are several (one join for an all-bytes array, element by element for a
mixed one, the header tables below 1024 bytes and formatting above): every case crosses
them, in the compiled build and in the pure one alike.
"""

from __future__ import annotations

import math

import hiredis
from hypothesis import given, settings
from hypothesis import strategies as st

from hotkv_server.commands.zsets import pairs_reply
from hotkv_server.engine.core import Context, Core
from hotkv_server.engine.doubles import format_double
from hotkv_server.server.resp import ErrorReply, OrderedSet, Simple, encode, encode_error
from hotkv_server.stores.zsetvalue import SortedSetValue


def _read(data: bytes, proto: int) -> object:
    reader = hiredis.Reader(notEnoughData=None)
    reader.feed(data)
    value = reader.gets()
    assert reader.gets() is None, f"more than one reply in {data[:80]!r}"  # nothing left over
    return value


def _sizes() -> st.SearchStrategy[bytes]:
    # around the table's end (1023 / 1024) and empty ones
    return st.one_of(st.binary(max_size=12), st.integers(1020, 1030).map(lambda n: b"x" * n))


@given(st.lists(_sizes(), min_size=1, max_size=30), st.sampled_from([2, 3]))
@settings(max_examples=150, deadline=None)
def test_an_array_of_bulk_strings_reads_back(items: list[bytes], proto: int) -> None:
    data = encode(items, proto)
    assert _read(data, proto) == items
    assert encode(tuple(items), proto) == data


@given(st.lists(st.one_of(_sizes(), st.integers(-5, 2000), st.none(), st.text(max_size=5)),
                min_size=1, max_size=20))
@settings(max_examples=150, deadline=None)
def test_a_mixed_array_reads_back(items: list[object]) -> None:
    want = [i.encode() if isinstance(i, str) else i for i in items]
    assert _read(encode(items, 2), 2) == want


def test_the_header_table_boundary_and_bytes_like_elements() -> None:
    big, edge = b"a" * 1024, b"b" * 1023
    assert encode([b"x", big, edge, b""], 2) == (
        b"*4\r\n$1\r\nx\r\n$1024\r\n" + big + b"\r\n$1023\r\n" + edge + b"\r\n$0\r\n\r\n")
    assert encode([big, b"y"], 2) == b"*2\r\n$1024\r\n" + big + b"\r\n$1\r\ny\r\n"
    # a bytearray or memoryview element is a bulk string of its bytes (the fallback path)
    assert encode([b"a", bytearray(b"bc"), memoryview(b"d")], 2) == (
        b"*3\r\n$1\r\na\r\n$2\r\nbc\r\n$1\r\nd\r\n")
    assert encode([b"a", [b"b", 1], Simple("OK")], 3) == b"*3\r\n$1\r\na\r\n*2\r\n$1\r\nb\r\n:1\r\n+OK\r\n"


def test_maps_and_sets_of_bytes() -> None:
    fields = {b"f1": b"v1", b"f" * 1500: b"", b"n": 7}
    assert _read(encode(fields, 2), 2) == [b"f1", b"v1", b"f" * 1500, b"", b"n", 7]
    assert encode(fields, 3).startswith(b"%3\r\n")
    assert _read(encode(fields, 3), 3) == fields
    assert encode({b"m"}, 3) == b"~1\r\n$1\r\nm\r\n"
    assert encode({b"m"}, 2) == b"*1\r\n$1\r\nm\r\n"
    assert encode(OrderedSet([b"b", b"a", 3]), 3) == b"~3\r\n$1\r\nb\r\n$1\r\na\r\n:3\r\n"


def _printf_17g(value: float) -> bytes:
    """Redis 7.0's text of a score: C's ``%.17g`` (``inf``/``-inf``/``nan`` aside)."""
    if math.isinf(value):
        return b"inf" if value > 0 else b"-inf"
    if math.isnan(value):
        return b"nan"
    return b"%.17g" % value


@given(st.one_of(st.floats(), st.integers(-(10**18), 10**18).map(float),
                 st.sampled_from([0.0, -0.0, 1e17, -1e17, 99999999999999984.0, 2.0**56])))
@settings(max_examples=500, deadline=None)
def test_a_score_is_printed_as_printf_17g(value: float) -> None:
    # format_double and ZRANGE WITHSCORES write an integral score as the integer (faster):
    # the text must be %.17g's, -0 and the 1e17 boundary included
    assert format_double(value) == _printf_17g(value)
    if not math.isnan(value):
        zset = SortedSetValue([(b"m", value)])  # (which stores -0.0 as 0.0)
        assert pairs_reply(_RESP2, list(zset)) == [b"m", _printf_17g(value + 0.0)]


_RESP2 = Context(Core())  # a RESP2 client's context, for pairs_reply


@given(st.lists(st.sampled_from(["a", " ", "\r", "\n", "+OK", "-E", ":1", "\u00e9"]),
                max_size=12).map("".join))
@settings(max_examples=300, deadline=None)
def test_an_error_is_one_line_whatever_its_text(text: str) -> None:
    # a script's error, a name a client sent: CR/LF inside an error must not end the line
    # (a reply of its own after it would be read as the next command's); as Redis, those at
    # its ends go and those inside become blanks
    message = "ERR " + text
    expected = message.strip("\r\n").replace("\r", " ").replace("\n", " ")
    for wire in (encode_error(message), encode([ErrorReply(message), 1], 2)):
        reader = hiredis.Reader()
        reader.feed(wire)
        first = reader.gets()
        if isinstance(first, list):
            first = first[0]
        assert isinstance(first, hiredis.ReplyError) and str(first) == expected
        assert wire.count(b"\r\n") == (1 if wire[:1] == b"-" else 3)
