"""``RequestReader`` on its own: bytes in, argument lists out, protocol errors as values.

The reader is fed what a client sends, whole or cut anywhere, and gives the requests in
order; a malformed request gives a ``ProtocolError`` carrying Redis 7's words (the texts
tests/security/test_limits.py compares with a real redis-server), after which the reader
gives nothing more. The limits (proto-max-bulk-len, client-query-buffer-limit, those of a
client that has not authenticated) are read live from the server's configuration.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from hotkv_server.commands import load_all
from hotkv_server.engine.config import load_config
from hotkv_server.engine.core import Core
from hotkv_server.server.reader import ProtocolError, Request, RequestReader


@dataclass
class Client:
    authenticated: bool = True
    addr: str = "127.0.0.1:40000"


def request(*words: bytes) -> bytes:
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%b\r\n" % (len(w), w) for w in words)


@pytest.fixture
def core() -> Core:
    load_all()
    return Core(load_config(["--port", "0", "--save", "", "--appendonly", "no"]))


def read_all(reader: RequestReader, reads: list[bytes], client: Client | None = None) -> list[Request]:
    client = client or Client()
    got: list[Request] = []
    for data in reads:
        got.extend(reader.feed(data, client))
        while reader.unread:
            got.extend(reader.feed(b"", client))
    return got


def errors(got: list[Request]) -> list[str]:
    return [item.message for item in got if isinstance(item, ProtocolError)]


#: multibulk and inline requests mixed, with quoting, an empty line and skipped counts
PIPELINE = (request(b"SET", b"k", b"v" * 40) + b"PING\r\n" + request(b"GET", b"k")
            + b'ECHO "two words" \'x\\\'y\'\r\n' + b"\r\n" + b"*-1\r\n" + b"*0\r\n"
            + request(b"ECHO", b"") + b"INCR n\n" + request(b"ECHO", b"a\r\nb"))
WORDS = [[b"SET", b"k", b"v" * 40], [b"PING"], [b"GET", b"k"], [b"ECHO", b"two words", b"x'y"],
         [b"ECHO", b""], [b"INCR", b"n"], [b"ECHO", b"a\r\nb"]]


def test_multibulk_and_inline_requests_come_out_in_order(core: Core) -> None:
    assert read_all(RequestReader(core), [PIPELINE]) == WORDS


@pytest.mark.parametrize("cut", range(1, len(PIPELINE)))
def test_a_pipeline_cut_at_any_byte_gives_the_same_requests(core: Core, cut: int) -> None:
    assert read_all(RequestReader(core), [PIPELINE[:cut], PIPELINE[cut:]]) == WORDS


def test_a_pipeline_read_one_byte_at_a_time(core: Core) -> None:
    reader = RequestReader(core)
    assert read_all(reader, [PIPELINE[i:i + 1] for i in range(len(PIPELINE))]) == WORDS
    assert reader.pending == 0


def test_pending_counts_the_incomplete_request(core: Core) -> None:
    reader = RequestReader(core)
    whole = request(b"SET", b"k", b"x" * 1000)
    assert read_all(reader, [whole[:600]]) == []
    assert reader.pending == 600
    assert read_all(reader, [whole[600:]]) == [[b"SET", b"k", b"x" * 1000]]
    assert reader.pending == 0
    assert read_all(reader, [b"PIN"]) == [] and reader.pending == 3


@pytest.mark.parametrize(("payload", "message"), [
    (b"*1\r\n$x\r\n", "invalid bulk length"),
    (b"*abc\r\n", "invalid multibulk length"),
    (b"*1\r\n:5\r\n", "expected '$', got ':'"),
    (b"*1\r\n\r\nxx", "expected '$', got ' '"),
    (b"*1\r\n$600000000\r\n", "invalid bulk length"),
    (b"*2000000\r\n", "invalid multibulk length"),
    (b"*2147483648\r\n$3\r\nGET\r\n", "invalid multibulk length"),
    (b'ECHO "abc\r\n', "unbalanced quotes in request"),
    (b"x" * (64 * 1024 + 1), "too big inline request"),
    (b"*1\r\n$" + b"1" * 40, "too big bulk count string"),
])
def test_protocol_errors_are_values_with_redis_words(core: Core, payload: bytes, message: str) -> None:
    got = read_all(RequestReader(core), [payload])
    assert errors(got) == [message] and got[-1] == got[0]
    assert got[0].reply == f"ERR Protocol error: {message}"  # type: ignore[union-attr]


def test_the_requests_before_an_error_come_first_and_nothing_after(core: Core) -> None:
    reader = RequestReader(core)
    got = read_all(reader, [b'PING\r\nECHO a\r\nECHO "x\r\nPING\r\n'])
    assert got[:2] == [[b"PING"], [b"ECHO", b"a"]]
    assert errors(got) == ["unbalanced quotes in request"] and len(got) == 3
    assert reader.broken and read_all(reader, [b"PING\r\n"]) == []


def test_an_error_in_a_later_read_of_a_request(core: Core) -> None:
    reader = RequestReader(core)
    assert read_all(reader, [b"*2\r\n$3\r\nGET\r\n"]) == []
    assert errors(read_all(reader, [b"$x\r\n"])) == ["invalid bulk length"]


def test_a_client_not_authenticated_has_the_small_limits(core: Core) -> None:
    stranger = Client(authenticated=False)
    got = read_all(RequestReader(core), [b"*11\r\n$4\r\nPING\r\n"], stranger)
    assert errors(got) == ["unauthenticated multibulk length"]
    got = read_all(RequestReader(core), [b"*2\r\n$3\r\nGET\r\n$16385\r\n"], stranger)
    assert errors(got) == ["unauthenticated bulk length"]
    # the same count cut in its digits: refused when the line is complete
    reader = RequestReader(core)
    assert read_all(reader, [b"*20"], stranger) == []
    assert errors(read_all(reader, [b"00\r\n"], stranger)) == ["unauthenticated multibulk length"]
    assert read_all(RequestReader(core), [request(b"GET", b"x" * 16384)], stranger) == [
        [b"GET", b"x" * 16384]]


def test_limits_follow_an_inline_auth_in_the_same_read(core: Core) -> None:
    """An inline AUTH and a big value in one read: the value is read once the AUTH before
    it ran, with the limits of a client that has authenticated."""
    client = Client(authenticated=False)
    reader = RequestReader(core)
    big = request(b"SET", b"k", b"v" * 20000)
    assert reader.feed(b"AUTH pw\r\n" + big, client) == [[b"AUTH", b"pw"]]
    assert reader.unread == big
    client.authenticated = True  # what AUTH did
    assert reader.feed(b"", client) == [[b"SET", b"k", b"v" * 20000]]
    # without the AUTH, the same value is refused
    stranger = Client(authenticated=False)
    reader = RequestReader(core)
    assert reader.feed(b"PING\r\n" + big, stranger) == [[b"PING"]]
    assert errors(reader.feed(b"", stranger)) == ["unauthenticated bulk length"]


def test_proto_max_bulk_len_is_read_live(core: Core) -> None:
    core.config.values["proto-max-bulk-len"] = 1000
    assert errors(read_all(RequestReader(core), [b"*2\r\n$3\r\nGET\r\n$1001\r\n"])) == [
        "invalid bulk length"]
    got = read_all(RequestReader(core), [request(b"GET", b"k" * 1000)])
    assert got == [[b"GET", b"k" * 1000]]


def test_a_request_growing_past_the_query_buffer_limit(core: Core) -> None:
    core.config.values["client-query-buffer-limit"] = 1024 * 1024
    reader = RequestReader(core)
    got = read_all(reader, [b"*2\r\n$3\r\nGET\r\n$500000000\r\n"]
                   + [b"x" * 65536 for _ in range(17)])
    assert errors(got) == ["query buffer limit exceeded"]


def test_negative_counts_are_skipped_as_redis_does(core: Core) -> None:
    got = read_all(RequestReader(core), [b"*-10\r\n*-1\r\n" + request(b"PING") + b"*-3\r\n"])
    assert got == [[b"PING"]]


def test_a_negative_count_after_a_request_and_a_star_minus_inside_a_value(core: Core) -> None:
    # the reader looks for '*-' from the first '*' past byte 0: a count after a request,
    # alone or cut across reads, and the same bytes inside a value (kept as they are)
    got = read_all(RequestReader(core), [request(b"PING") + b"*-1\r\n" + request(b"ECHO", b"*-1")])
    assert got == [[b"PING"], [b"ECHO", b"*-1"]]
    got = read_all(RequestReader(core), [request(b"SET", b"k", b"a*-2b"), b"*-2\r\n",
                                         request(b"GET", b"k")])
    assert got == [[b"SET", b"k", b"a*-2b"], [b"GET", b"k"]]


@pytest.mark.parametrize(("line", "words"), [
    (b"PING\r\n", [b"PING"]),
    (b"PING\n", [b"PING"]),
    (b"  SET  k \t v \r\n", [b"SET", b"k", b"v"]),
    (b'ECHO "a b" \'c\\\'d\' "\\x41\\n"\r\n', [b"ECHO", b"a b", b"c'd", b"A\n"]),
    (b"\r\n", []),
])
def test_one_inline_line_in_a_read(core: Core, line: bytes, words: list[bytes]) -> None:
    expected = [words] if words else []
    assert read_all(RequestReader(core), [line]) == expected
    # the same line among others, and cut in two, gives the same words
    assert read_all(RequestReader(core), [line + line]) == expected * 2
    assert read_all(RequestReader(core), [line[:2], line[2:]]) == expected


@pytest.mark.parametrize("line", [b'SET k "v"x\r\n', b"ECHO 'open\r\n", b'ECHO "open\n'])
def test_one_inline_line_with_bad_quotes(core: Core, line: bytes) -> None:
    assert errors(read_all(RequestReader(core), [line])) == ["unbalanced quotes in request"]
    assert errors(read_all(RequestReader(core), [b"PING\r\n" + line])) == [
        "unbalanced quotes in request"]
