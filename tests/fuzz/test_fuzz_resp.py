"""The RESP reader of a live server, fuzzed: random bytes and mutated requests.

Each case opens a connection, sends its bytes (whole, or in pieces with pauses so the
parser sees partial requests), reads what comes back and closes. After every case a
fresh connection must get PONG, whatever the server answered must be well-formed RESP,
and the data written before the run must be intact at the end. The server's stderr
and log must stay free of tracebacks and internal errors (an exception in the protocol code
lands there).

The default user may do anything but the commands that would end the run (FLUSHALL,
SHUTDOWN, CONFIG, ACL, CLIENT, DEBUG, MONITOR ...): a mutation can turn bytes into any
command, and this test is about the reader. The data it checks sits under key names no
case can produce.

Bounded for the suite (about 6 seconds); ``HOTKV_FUZZ_SECONDS`` scales it
(tests/fuzz/README.md).
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Iterator

import hiredis
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import HotkvProcess
from hotkv_server.commands import load_all
from hotkv_server.engine.registry import COMMANDS

FUZZ_SECONDS = float(os.environ.get("HOTKV_FUZZ_SECONDS", "0") or 0)
SUITE_SECONDS = 6.0
BUDGET = FUZZ_SECONDS or SUITE_SECONDS

load_all()
#: commands the fuzzing user may not run (those the table has: some land later)
DENIED = [f"-{name}" for name in (
    "flushall", "flushdb", "shutdown", "config", "acl", "client", "debug", "monitor", "save",
    "bgsave", "bgrewriteaof", "replicaof", "slaveof", "sync", "psync", "failover", "select",
    "slowlog", "quit", "reset",
) if name in COMMANDS]

TAG = uuid.uuid4().hex
SENTINELS = {f"sentinel:{TAG}:{i}".encode(): os.urandom(64) for i in range(20)}


def resp(*args: bytes | str) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        raw = arg.encode() if isinstance(arg, str) else arg
        parts.append(b"$%d\r\n%b\r\n" % (len(raw), raw))
    return b"".join(parts)


CORPUS = [
    resp("PING"),
    resp("ECHO", "hello"),
    resp("SET", "fz:a", "1"),
    resp("SET", "fz:b", "x" * 40, "EX", "100"),
    resp("GET", "fz:a"),
    resp("MGET", "fz:a", "fz:b", "fz:c"),
    resp("INCRBY", "fz:n", "5"),
    resp("DEL", "fz:a"),
    resp("HELLO", "3"),
    resp("HELLO", "2"),
    resp("MULTI") + resp("SET", "fz:t", "1") + resp("EXEC"),
    resp("AMEM.CONV.CREATE", "fz:s", "WINDOW", "5"),
    resp("AMEM.CONV.APPEND", "fz:s", "user", "hi there", "META", '{"k": [1, 2]}'),
    resp("AMEM.WORK.SET", "fz:s", "k", "[1]", "MERGE", "APPEND"),
    resp("AMEM.EPIS.LOG", "fz:agent", "action", "clicked"),
    resp("AMEM.SEM.CREATE", "fz:ns", "3"),
    resp("AMEM.SEM.STORE", "fz:ns", "f", "text", "FP32", b"\x00\x00\x80?" * 3),
    resp("AMEM.SEM.RECALL", "fz:ns", "2", "1", "0", "0"),
    resp("AMEM.SUMMARY.SET", "fz:agent", "summary"),
    b"PING\r\n",
    b"SET fz:inline \"quoted \\x41\\n\" 'single'\r\n",
    b"GET fz:inline\n",
    b"*1\r\n$4\r\nPING\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$1\r\nz\r\n",
    b"*0\r\n",
    b"*-1\r\n",
    b"\r\n\r\n",
]

MARKERS = [b"*", b"$", b"+", b"-", b":", b",", b"#", b"%", b"~", b"=", b"_", b"\r\n", b"\n",
           b"\r", b"\x00", b"\"", b"'", b" ", b"-1", b"0", b"2147483648", b"9223372036854775807",
           b"99999999999999999999", b"-2", b"1048577", b"536870913"]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(b"".join(draw(st.lists(st.sampled_from(CORPUS), min_size=1, max_size=3))))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "marker", "count",
                                     "dup"]))
        if not data:
            data.extend(draw(st.sampled_from(MARKERS)))
            continue
        pos = draw(st.integers(0, len(data) - 1))
        if kind == "flip":
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[pos : pos + draw(st.integers(1, 6))]
        elif kind == "truncate":
            del data[pos:]
        elif kind == "marker":
            data[pos:pos] = draw(st.sampled_from(MARKERS))
        elif kind == "count":
            # rewrite a length or count: *N / $N with an edge value
            starts = [i for i, c in enumerate(data) if c in b"*$"]
            if starts:
                i = draw(st.sampled_from(starts))
                end = data.find(b"\r\n", i)
                if end > 0:
                    data[i + 1 : end] = draw(st.sampled_from(MARKERS[14:]))
        else:
            data.extend(data[pos:])
    return bytes(data)


def raw_random() -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.binary(max_size=200),
        st.tuples(st.sampled_from([b"*", b"$", b"*1\r\n$", b"*2\r\n$3\r\nGET\r\n"]),
                  st.binary(max_size=60)).map(b"".join),
        st.lists(st.sampled_from(MARKERS), max_size=20).map(b"".join),
    )


class Session:
    """The server under fuzz and the checks run between cases."""

    def __init__(self, proc: HotkvProcess) -> None:
        self.proc = proc
        self.stderr = b""
        self.cases = 0
        assert proc.proc is not None and proc.proc.stderr is not None
        os.set_blocking(proc.proc.stderr.fileno(), False)

    def drain_stderr(self) -> bytes:
        assert self.proc.proc is not None and self.proc.proc.stderr is not None
        try:
            chunk = self.proc.proc.stderr.read()
        except BlockingIOError:
            chunk = None
        if chunk:
            self.stderr += chunk
        return self.stderr

    def send_case(self, payload: bytes, pieces: list[int], pause: float,
                  wait: float = 0.05) -> bytes:
        """Send ``payload`` (cut at ``pieces``, ``pause`` s apart) on a new connection and
        return what came back until the server closed it or ``wait`` s passed in silence."""
        with socket.create_connection(("127.0.0.1", self.proc.port), timeout=2) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                start = 0
                for cut in [*sorted(set(pieces)), len(payload)]:
                    if cut <= start or cut > len(payload):
                        continue
                    sock.sendall(payload[start:cut])
                    start = cut
                    if pause:
                        time.sleep(pause)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server closed after a protocol error: allowed
            sock.settimeout(wait)
            got = []
            while True:
                try:
                    chunk = sock.recv(65536)
                except (TimeoutError, ConnectionResetError):
                    break
                if not chunk:
                    break
                got.append(chunk)
        return b"".join(got)

    def check_answer(self, answer: bytes) -> None:
        """Whatever came back parses as RESP (a cut-off tail is fine: we hung up)."""
        reader = hiredis.Reader()
        reader.feed(answer)
        while True:
            try:
                reply = reader.gets()
            except hiredis.ProtocolError as exc:
                raise AssertionError(f"server sent malformed RESP: {answer[:300]!r}") from exc
            if reply is False:
                break

    def check_alive(self) -> None:
        with socket.create_connection(("127.0.0.1", self.proc.port), timeout=5) as sock:
            sock.sendall(b"*1\r\n$4\r\nPING\r\n")
            assert sock.recv(64) == b"+PONG\r\n"
        assert self.proc.proc is not None and self.proc.proc.poll() is None
        assert b"Traceback" not in self.drain_stderr(), self.stderr.decode(errors="replace")
        # a bug caught by the request layer is logged with its traceback and answered
        # 'ERR internal error ...' before the connection closes
        log = self.proc.log()
        assert "Traceback" not in log and "internal error" not in log, log[-3000:]

    def check_data(self) -> None:
        client = self.proc.client(protocol=3)
        try:
            keys = list(SENTINELS)
            assert client.mget(keys) == [SENTINELS[k] for k in keys]
            turns = client.execute_command("AMEM.CONV.WINDOW", f"sentinel:{TAG}")
            assert [t[b"content"] for t in turns] == [b"first", b"second"]
            assert client.execute_command("AMEM.WORK.GET", f"sentinel:{TAG}", "k") == b"kept"
        finally:
            client.close()


@pytest.fixture(scope="module")
def session() -> Iterator[Session]:
    proc = HotkvProcess("--user", "default", "on", "nopass", "~*", "+@all", *DENIED).start()
    try:
        client = proc.client(protocol=3)
        client.mset(SENTINELS)
        client.execute_command("AMEM.CONV.CREATE", f"sentinel:{TAG}")
        client.execute_command("AMEM.CONV.APPEND", f"sentinel:{TAG}", "user", "first")
        client.execute_command("AMEM.CONV.APPEND", f"sentinel:{TAG}", "assistant", "second")
        client.execute_command("AMEM.WORK.SET", f"sentinel:{TAG}", "k", "kept")
        client.close()
        sess = Session(proc)
        sess.check_data()
        yield sess
        sess.check_alive()
        sess.check_data()
    finally:
        proc.cleanup()


def run_cases(session: Session, strategy: st.SearchStrategy[bytes], seconds: float) -> None:
    stop_at = time.monotonic() + seconds

    @settings(max_examples=100, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(payload=strategy,
           pieces=st.lists(st.integers(0, 400), max_size=4),
           pause=st.sampled_from([0.0, 0.0, 0.002]))
    def case(payload: bytes, pieces: list[int], pause: float) -> None:
        if time.monotonic() > stop_at:
            return
        answer = session.send_case(payload, pieces, pause)
        session.check_answer(answer)
        session.check_alive()
        session.cases += 1

    while time.monotonic() < stop_at:  # fresh random cases each round until time is up
        case()


def test_random_bytes(session: Session) -> None:
    run_cases(session, raw_random(), BUDGET * 0.4)
    session.check_data()


def test_mutated_requests(session: Session) -> None:
    run_cases(session, mutated(), BUDGET * 0.6)
    session.check_data()
    assert session.cases > 50


# --- regressions: each failure the fuzzer found, as a fixed case ---------------------------


def test_protocol_error_naming_a_newline_stays_one_line(session: Session) -> None:
    # (the server closes the connection after the error: a long wait costs nothing, and
    # a loaded machine's late answer is not lost)
    answer = session.send_case(b"*1\r\n\r\nxx", [], 0.0, wait=5.0)
    assert answer == b"-ERR Protocol error: expected '$', got ' '\r\n"
    session.check_alive()


def _header_is_short(data: bytes, max_bulk: int) -> bool:
    """The rule ``short_header`` encodes, written out plainly: the first CRLF within the
    first 8 bytes ends the count line; then the read ends, or a bulk length line follows
    of fewer digits than ``max_bulk`` has follows (its CRLF ends within len + 1 bytes of
    the '$')."""
    end = data.find(b"\r\n", 1, 8)
    if not data.startswith(b"*") or end < 0:
        return False
    start = end + 2
    if start == len(data):
        return True
    if data[start : start + 1] != b"$":
        return False
    return data.find(b"\r\n", start + 1, start + 1 + len(str(max_bulk))) >= 0


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from([b"*", b"$", b"\r", b"\n", b"\r\n", b"1", b"0", b"9", b"a"]),
                max_size=16),
       st.sampled_from([5, 99, 1000, 512 * 1024 * 1024, 10**12]))
def test_short_header_pattern_follows_its_rule(parts: list[bytes], max_bulk: int) -> None:
    from hotkv_server.engine.config import short_header

    data = b"*" + b"".join(parts)
    assert (short_header(max_bulk).match(data) is not None) == _header_is_short(data, max_bulk)


@settings(max_examples=600, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=6).filter(
           lambda w: not any(c in w for c in b" \t\r\n\x0b\x0c\"'\\")), max_size=6),
       st.lists(st.sampled_from([b" ", b"\t", b"  ", b"\x0b", b"\x0c", b"\r"]), min_size=7, max_size=7))
def test_inline_words_without_quotes_split_as_quoted_ones(words: list[bytes],
                                                          blanks: list[bytes]) -> None:
    """The quote-free fast path of split_args gives what the quoting parser gives for the
    same words each wrapped in quotes."""
    from hotkv_server.engine.words import split_args

    plain = blanks[0] + b"".join(w + blanks[i + 1] for i, w in enumerate(words))
    quoted = blanks[0] + b"".join(b'"' + w + b'"' + blanks[i + 1] for i, w in enumerate(words))
    assert split_args(plain) == words
    assert split_args(quoted) == words
