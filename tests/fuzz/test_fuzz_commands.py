"""Every command's argument parsing, fuzzed in-process through the one dispatch point.

For every command and subcommand of the table, hypothesis draws argument lists shaped by
the command's own syntax tree (``spec.arguments``: tokens, optional parts, alternatives,
repeats, typed values at their edges) and then mutates them (dropped, repeated, swapped,
case-changed arguments, random bytes). Each one runs through ``dispatch()`` on a Core that
holds a little of everything. The reply must be a value that encodes in RESP2 and RESP3,
or an error of one line starting with an upper-case code, and never
``ERR internal error`` (a handler that raised). The database must answer afterwards.

Bounded for the suite (a few examples per command); ``HOTKV_FUZZ_SECONDS=600`` spreads
that many seconds over the commands instead (see tests/fuzz/README.md).
"""

from __future__ import annotations

import os
import re
import struct
import time
from functools import cache
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hotkv_server.commands import acl, load_all
from hotkv_server.engine.clock import ManualClock
from hotkv_server.engine.config import Config
from hotkv_server.engine.context import Context
from hotkv_server.engine.core import Core
from hotkv_server.engine.dispatch import NO_REPLY, Deferred, dispatch
from hotkv_server.engine.registry import CommandSpec, all_specs
from hotkv_server.engine.syntax import Arg
from hotkv_server.server.resp import ErrorReply, encode

load_all()

#: commands that stop, block, sleep, touch files or processes, or feed other clients
SKIPPED = {
    "shutdown", "debug", "monitor", "replicaof", "slaveof", "save", "bgsave", "bgrewriteaof",
    "acl|save", "acl|load", "config|rewrite", "sync", "psync", "replconf", "failover", "wait",
}

FUZZ_SECONDS = float(os.environ.get("HOTKV_FUZZ_SECONDS", "0") or 0)
SUITE_EXAMPLES = 15
#: fewer examples where each is slow and the argument space is one fixed word: MEMORY PURGE
#: runs gc.collect() over the whole pytest heap (about 0.8 s a call late in the suite)
EXAMPLES_FOR = {"memory|purge": 3}

ERROR_LINE = re.compile(r"^[A-Z][A-Z_]*( |$)")


def fuzzed_specs() -> list[CommandSpec]:
    out: list[CommandSpec] = []
    for spec in all_specs():
        if spec.subcommands:
            out.extend(s for s in spec.subcommands.values() if s.name not in SKIPPED)
            if spec.handler is not None and spec.name not in SKIPPED:
                out.append(spec)
        elif spec.name not in SKIPPED:
            out.append(spec)
    return out


SPECS = fuzzed_specs()
PER_COMMAND_SECONDS = FUZZ_SECONDS / max(len(SPECS), 1)


# --- values at their edges -------------------------------------------------------------

NOW = 1_700_000_000_000
SEED_IDS = [b"k1", b"counter", b"s1", b"ns4", b"agent1", b"missing", b"tenant:a", b"",
            b"hash1", b"set1", b"bigset", b"list1", b"zset1", b"bigzset"]
EDGE_INTS = [b"0", b"1", b"-1", b"2", b"10", b"100", b"1000", b"1001", b"10000", b"10001",
             b"100000", b"100001", b"4096", b"4097", b"9223372036854775807",
             b"9223372036854775808", b"-9223372036854775808", b"-9223372036854775809",
             b"18446744073709551616", b"99999999999999999999999999", b"+5", b" 5", b"5 ",
             b"0x10", b"1e3", b"1.5", b"", b"abc", b"007", b"-0", str(NOW).encode(),
             str(NOW // 1000).encode()]
EDGE_FLOATS = [b"0", b"1", b"0.5", b"-0.5", b"1.0000001", b"nan", b"NaN", b"inf", b"-inf",
               b"+inf", b"1e309", b"-1e309", b"1e-320", b"", b"abc", b"0x1p3", b"1_0", b".5",
               b"5.", b"--1", b"3.4028235e38", b"3.5e38"]
EDGE_TEXT = [b"", b"x", b"{}", b"{\"a\": 1}", b"[1, 2]", b"{\"a\":", b"null", b"\"s\"",
             b"{\"a\": NaN}", b"{\"a\": 1e999}", b"\xff\xfe", b"\x00", b"a\r\nb", b"*", b"?",
             b"[", b"\\", b"-", b"+", b"0-0", b"0-1", b"1-18446744073709551616",
             b"18446744073709551615-0", b"user", b"assistant", b"system", b"tool", b"fact",
             b"action", b"x" * 513, b"A" * 33, b"a.b-c_d", b"UPPER"]


def tokens_of(spec: CommandSpec) -> list[bytes]:
    """Every literal token of the command's syntax (to mix into the mutations)."""
    found: list[bytes] = []

    def walk(args: tuple[Arg, ...]) -> None:
        for arg in args:
            if arg.token:
                found.append(arg.token.encode())
            walk(arg.children)

    walk(spec.arguments)
    found.extend(w.encode() for w in re.findall(r"\b[A-Z][A-Z0-9_-]+\b", spec.syntax))
    return sorted(set(found)) or [b"X"]


@cache
def blob(dim_choices: tuple[int, ...] = (0, 1, 3, 4, 5, 16)) -> st.SearchStrategy[bytes]:
    finite = st.lists(st.floats(width=32, allow_nan=True, allow_infinity=True), max_size=6)
    return st.one_of(
        st.sampled_from(dim_choices).map(lambda n: struct.pack(f"<{n}f", *([0.5] * n))),
        finite.map(lambda xs: struct.pack(f"<{len(xs)}f", *xs)),
        st.binary(max_size=24),
    )


@cache  # strategies are built once: building them is what costs
def value_for(arg: Arg) -> st.SearchStrategy[bytes]:
    name = arg.name.lower()
    if arg.type == "key":
        return st.one_of(st.sampled_from(SEED_IDS), st.binary(max_size=12))
    if arg.type == "integer" or name in ("count", "n", "k", "s", "ms", "dim", "m", "cursor", "v"):
        return st.one_of(st.sampled_from(EDGE_INTS),
                         st.integers(-(2**65), 2**65).map(lambda i: str(i).encode()))
    if arg.type == "double" or name in ("c", "x", "confidence"):
        return st.one_of(st.sampled_from(EDGE_FLOATS),
                         st.floats(allow_nan=True, allow_infinity=True).map(lambda f: repr(f).encode()))
    if name in ("blob",):
        return blob()
    if name in ("json-object",):
        return st.one_of(st.sampled_from(EDGE_TEXT),
                         st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=4),
                                      lambda kids: st.lists(kids, max_size=3)
                                      | st.dictionaries(st.text(max_size=3), kids, max_size=3),
                                      max_leaves=6).map(lambda v: repr(v).encode()))
    return st.one_of(st.sampled_from(EDGE_TEXT + SEED_IDS), st.binary(max_size=16))


@cache
def from_syntax(args: tuple[Arg, ...]) -> st.SearchStrategy[list[bytes]]:
    return _from_syntax(args)


@st.composite
def _from_syntax(draw: st.DrawFn, args: tuple[Arg, ...]) -> list[bytes]:
    """Arguments that follow the syntax tree, each optional part in or out at random."""
    out: list[bytes] = []
    for arg in args:
        if arg.optional and not draw(st.booleans()):
            continue
        repeats = draw(st.integers(1, 3)) if arg.multiple else 1
        for _ in range(repeats):
            if arg.token:
                token = arg.token
                out.append(draw(st.sampled_from([token, token.lower(), token.title()])).encode())
            if arg.type == "pure-token":
                if not arg.token:
                    out.append(arg.name.upper().encode())
            elif arg.type == "oneof":
                choice = draw(st.sampled_from(arg.children))
                out.extend(draw(from_syntax((choice,))))
            elif arg.type == "block":
                out.extend(draw(from_syntax(arg.children)))
            elif arg.name in ("v1", "vdim"):
                dim = draw(st.sampled_from([1, 3, 4, 5]))
                out.extend(draw(st.lists(value_for(arg), min_size=dim, max_size=dim)))
                break
            else:
                out.append(draw(value_for(arg)))
    return out


_TOKENS: dict[str, list[bytes]] = {}


@st.composite
def argv_for(draw: st.DrawFn, spec: CommandSpec) -> list[bytes]:
    """A syntax-shaped call of ``spec``, then a few mutations."""
    name = spec.name.split("|")
    head = [draw(st.sampled_from([n.encode(), n.upper().encode()])) for n in name]
    args = draw(from_syntax(spec.arguments))
    tokens = _TOKENS.get(spec.name)
    if tokens is None:
        tokens = _TOKENS[spec.name] = tokens_of(spec)
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["drop", "dup", "swap", "token", "bytes", "edge", "truncate"]))
        if kind == "drop" and args:
            del args[draw(st.integers(0, len(args) - 1))]
        elif kind == "dup" and args:
            i = draw(st.integers(0, len(args) - 1))
            args.insert(i, args[i])
        elif kind == "swap" and len(args) >= 2:
            i = draw(st.integers(0, len(args) - 2))
            args[i], args[i + 1] = args[i + 1], args[i]
        elif kind == "token":
            args.insert(draw(st.integers(0, len(args))), draw(st.sampled_from(tokens)))
        elif kind == "bytes":
            args.insert(draw(st.integers(0, len(args))), draw(st.binary(max_size=20)))
        elif kind == "edge":
            pick = draw(st.sampled_from(EDGE_INTS + EDGE_FLOATS + EDGE_TEXT))
            if args:
                args[draw(st.integers(0, len(args) - 1))] = pick
            else:
                args.append(pick)
        elif kind == "truncate" and args:
            del args[draw(st.integers(0, len(args) - 1)):]
    return head + args


# --- the world each call runs in --------------------------------------------------------

SEED = [
    [b"SET", b"k1", b"hello"],
    [b"SET", b"counter", b"10"],
    [b"SET", b"tenant:a", b"v", b"PX", b"100000"],
    [b"AMEM.CONV.CREATE", b"s1", b"WINDOW", b"3"],
    [b"AMEM.CONV.APPEND", b"s1", b"user", b"hi", b"META", b"{\"a\": 1}"],
    [b"AMEM.SEM.CREATE", b"ns4", b"4", b"CAPACITY", b"3"],
    [b"AMEM.SEM.STORE", b"ns4", b"f1", b"a fact", b"1", b"0", b"0", b"0", b"TTL", b"100"],
    [b"AMEM.SEM.STORE", b"ns4", b"f2", b"other", b"0", b"1", b"0", b"0", b"CONFIDENCE", b"0.2"],
    [b"AMEM.WORK.SET", b"s1", b"key", b"[1]"],
    [b"AMEM.WORK.SET", b"s1", b"n", b"5", b"TTL", b"100"],
    [b"AMEM.EPIS.LOG", b"agent1", b"action", b"did it", b"SOURCE", b"test"],
    [b"AMEM.SUMMARY.SET", b"agent1", b"so far", b"UPTO", b"0-1"],
    [b"HSET", b"hash1", b"f1", b"v1", b"n", b"5", b"fl", b"1.5"],
    [b"SADD", b"set1", b"a", b"b", b"1"],
    [b"SADD", b"bigset", *[b"m%d" % i for i in range(600)]],
    [b"RPUSH", b"list1", b"a", b"b", b"a", b"c"],
    [b"ZADD", b"zset1", b"1", b"a", b"2", b"b", b"2", b"c", b"inf", b"top"],
    [b"ZADD", b"bigzset", *[x for i in range(200) for x in (b"%d" % i, b"m%d" % i)]],
]


class World:
    """One Core with the ACL table, seeded; config and users restored after every call."""

    def __init__(self) -> None:
        self.clock = ManualClock(NOW)
        self.core = Core(Config(), self.clock)
        acl.attach(SimpleNamespace(core=self.core))
        self.config_before = dict(self.core.config.values)  # every directive by name
        admin = self.admin()
        for argv in SEED:
            reply = dispatch(admin, argv)
            assert not isinstance(reply, ErrorReply), (argv, reply)

    def admin(self) -> Context:
        """A context that bypasses auth and ACL (checks and seeding)."""
        ctx = Context(self.core, "127.0.0.1:1", "127.0.0.1:2")
        ctx.user = None
        ctx.authenticated = True
        return ctx

    def client(self) -> Context:
        ctx = Context(self.core, "127.0.0.1:5000", "127.0.0.1:6379")
        ctx.proto = 3
        return ctx

    def reset(self) -> None:
        """Undo what a fuzzed call may have changed outside the data."""
        self.core.config.restore(self.config_before)
        self.core.users = None
        for sub in [s for s in self.core.subsystems if isinstance(s, acl.AclSettings)]:
            self.core.detach(sub)
        acl.attach(SimpleNamespace(core=self.core))
        self.core.role = "master"
        self.core.stats.unexpected_error_replies = 0
        self.clock.advance(7)
        if not self.core.db.kv.exists(b"k1", self.clock.now_ms()):
            admin = self.admin()
            for argv in SEED:
                dispatch(admin, argv)


def check_reply(reply: Any, argv: list[bytes]) -> None:
    """A value that encodes, or a well-formed error; never a crash, at any depth."""
    if reply is NO_REPLY:
        return
    for proto in (2, 3):
        encoded = encode(reply, proto)
        assert isinstance(encoded, bytes) and encoded.endswith(b"\r\n")
    walk_errors(reply, argv)


def walk_errors(value: Any, argv: list[bytes]) -> None:
    if isinstance(value, ErrorReply):
        text = str(value)
        assert "\r" not in text and "\n" not in text, (argv, text)
        assert ERROR_LINE.match(text), (argv, text)
        assert not text.startswith("ERR internal error"), (argv, text)
    elif isinstance(value, list):
        for item in value:
            walk_errors(item, argv)
    elif isinstance(value, dict):
        for item in value.values():
            walk_errors(item, argv)


def check_alive(world: World) -> None:
    admin = world.admin()
    assert dispatch(admin, [b"PING"]) == "PONG"
    assert dispatch(admin, [b"SET", b"__alive__", b"yes"]) == "OK"
    assert dispatch(admin, [b"GET", b"__alive__"]) == b"yes"
    assert dispatch(admin, [b"AMEM.WORK.SET", b"__alive__", b"k", b"v"]) == "OK"
    assert dispatch(admin, [b"AMEM.WORK.GET", b"__alive__", b"k"]) == b"v"
    assert world.core.stats.unexpected_error_replies == 0


#: commands with a known crash, listed for their owner (each has a regression test below)
KNOWN_CRASHES: dict[str, str] = {}


def _param(spec: CommandSpec) -> Any:
    reason = KNOWN_CRASHES.get(spec.name)
    marks = [pytest.mark.xfail(reason=reason, strict=False)] if reason else []
    return pytest.param(spec, id=spec.name, marks=marks)


@pytest.mark.parametrize("spec", [_param(s) for s in SPECS])
def test_fuzz_command(spec: CommandSpec) -> None:
    world = World()

    @settings(max_examples=EXAMPLES_FOR.get(spec.name, SUITE_EXAMPLES), deadline=None,
              database=None,
              suppress_health_check=list(HealthCheck))
    @given(argv=argv_for(spec), in_multi=st.booleans(), proto=st.sampled_from([2, 3]))
    def run(argv: list[bytes], in_multi: bool, proto: int) -> None:
        ctx = world.client()
        ctx.proto = proto
        try:
            if in_multi:
                assert dispatch(ctx, [b"MULTI"]) == "OK"
                check_reply(dispatch(ctx, argv), argv)
                check_reply(dispatch(ctx, [b"EXEC"]), argv)
            else:
                reply = dispatch(ctx, argv)
                if isinstance(reply, Deferred):  # a blocking command that waits: end the wait
                    assert world.core.blocking.unblock(ctx.id, error=False)
                    assert reply.done
                    reply = reply.value
                check_reply(reply, argv)
            check_alive(world)
        finally:
            ctx.unwatch()
            world.reset()

    run()
    # a longer run (HOTKV_FUZZ_SECONDS) repeats with fresh random examples until its share
    # of the time is spent
    stop_at = time.monotonic() + PER_COMMAND_SECONDS
    while time.monotonic() < stop_at:
        run()


# --- regressions: each crash the fuzzer found, as a fixed call ---------------------------


def test_client_kill_with_a_non_utf8_option_is_an_error() -> None:
    world = World()
    reply = dispatch(world.client(), [b"CLIENT", b"KILL", b"\x80", b"\x80"])
    check_reply(reply, [b"CLIENT", b"KILL"])
    assert isinstance(reply, ErrorReply)


def test_every_command_is_fuzzed_or_knowingly_skipped() -> None:
    names = {s.name for s in SPECS}
    for spec in all_specs():
        for sub in [spec, *spec.subcommands.values()]:
            if sub.handler is None:
                continue
            # blocking commands (BLPOP ...) are left out of SPECS: a fuzzed call would wait
            assert sub.name in names or sub.name in SKIPPED or "blocking" in sub.flags, sub.name
