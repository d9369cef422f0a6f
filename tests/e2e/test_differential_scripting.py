"""Scripting against a real redis-server 7: the same EVAL/EVALSHA/SCRIPT calls to both, in
RESP2 and RESP3, replies compared as tagged trees (RESP type of every element kept).

Covered: the reply conversion both ways (numbers truncated, tables up to the first nil,
false, ok/err tables, RESP3 maps/sets/doubles/booleans/big numbers via redis.setresp(3)),
redis.call raising and redis.pcall returning errors, error texts (``... script: <sha>, on
@user_script:<line>.``), the protected globals, cjson/cmsgpack/bit/struct, the SCRIPT
subcommands, EVAL_RO and shebang flags, WRONGTYPE/arity/noscript refusals from scripts.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from e2e.test_differential import RespConnection
from helpers import HotkvProcess, RedisServer

#: (script, keys, args): each is sent as EVAL script numkeys keys... args...
SCRIPTS: list[tuple[str, list[str], list[str]]] = [
    # Lua -> reply
    ("return 1", [], []),
    ("return 3.99", [], []),
    ("return -3.99", [], []),
    ("return 1e20", [], []),
    ("return 0/0", [], []),
    ("return 'x'", [], []),
    ("return true", [], []),
    ("return false", [], []),
    ("return nil", [], []),
    ("return {1, 2, 3, nil, 5}", [], []),
    ("return {1, false, 3}", [], []),
    ("return {1.5, 'a', true, false, {1, {2}}}", [], []),
    ("return {ok = 'FINE'}", [], []),
    ("return {err = 'My Error'}", [], []),
    ("return {err = 'nocode'}", [], []),
    ("return {ok = 5}", [], []),
    ("return {err = 5}", [], []),
    ("return {ok = 'x', err = 'y'}", [], []),
    ("return {double = 1.5}", [], []),
    ("return {double = 3}", [], []),
    # Redis 7.0 prints a script's doubles with %.17g (1.1000000000000001), nested ones too
    ("return {double = 1.1}", [], []),
    ("redis.setresp(3); return {double = 1/3}", [], []),
    # -0 stays -0 (lupa gives Python a whole Lua number as an int, -0 as 0)
    ("redis.setresp(3); return {double = -0.0}", [], []),
    ("redis.setresp(3); return {double = 0}", [], []),
    ("redis.setresp(3); return redis.pcall('zadd', KEYS[1], 'INCR', '-0', 'a')", ["nz"], []),
    ("return {1.1, {double = 0.1}}", [], []),
    ("return {map = {a = 1}}", [], []),
    ("return {set = {a = true}}", [], []),
    ("return {big_number = '123456789012345678901234567890'}", [], []),
    ("return {big_number = 123}", [], []),
    ("return {1, {err = 'ERR inner'}, 3}", [], []),
    ("return redis.error_reply('My Error')", [], []),
    ("return redis.error_reply('x')", [], []),
    ("return redis.status_reply('FINE')", [], []),
    ("return function() end", [], []),
    ("return {KEYS[1], KEYS[2], ARGV[1], ARGV[2], #KEYS, #ARGV}", ["k1", "k2"], ["a1", "a2"]),
    # reply -> Lua (RESP2 rules)
    ("return redis.call('set', KEYS[1], ARGV[1])", ["s"], ["v"]),
    ("redis.call('set', 's', 'v'); return redis.call('get', 's')", [], []),
    ("return type(redis.call('get', 'missing'))", [], []),
    ("return redis.call('get', 'missing')", [], []),
    ("return type(redis.call('ping'))", [], []),
    ("return redis.call('ping').ok", [], []),
    # every redis.call gets a table of its own (hotkv makes {ok = 'OK'} tables in batches)
    ("local a = redis.call('set', 'o', 'v') a.ok = 'changed' local b = redis.call('set', 'o', 'v') "
     "return {a.ok, b.ok, tostring(rawequal(a, b)), tostring(next(b, 'ok'))}", [], []),
    ("local t = {} for i = 1, 150 do t[i] = redis.call('set', 'o', i) end t[7].ok = 'x' "
     "local seen, n = {}, 0 for _, r in ipairs(t) do if not seen[r] then seen[r] = true n = n + 1 end end "
     "return {n, t[7].ok, t[8].ok, t[150].ok}", [], []),
    ("return redis.call('incr', 'n')", [], []),
    # a sorted set's scores as a script sees them (Redis 7.0: the %.17g text in RESP2)
    ("redis.call('zadd', KEYS[1], 1.1, 'a'); return redis.call('zscore', KEYS[1], 'a')", ["z"], []),
    ("redis.call('zadd', KEYS[1], 1.1, 'a', 2, 'b', '-inf', 'c'); "
     "return redis.call('zrange', KEYS[1], 0, -1, 'withscores')", ["z"], []),
    ("return redis.call('zincrby', KEYS[1], 0.1, 'a')", ["z"], []),
    ("redis.call('zadd', KEYS[1], 0.3, 'a'); return redis.call('zpopmin', KEYS[1])", ["z"], []),
    ("redis.setresp(3); redis.call('zadd', KEYS[1], 1.5, 'a'); "
     "return redis.call('zscore', KEYS[1], 'a').double", ["z"], []),
    ("redis.call('set', 'n', 1); return redis.call('incrby', 'n', 2.0)", [], []),
    ("return redis.call('echo', 0.1)", [], []),
    ("return redis.call('echo', 1/3)", [], []),
    ("return redis.call('echo', 1e20)", [], []),
    ("return redis.call('echo', 3)", [], []),
    ("return redis.call('echo', 1/0)", [], []),
    ("return redis.call('mget', 'missing', 'missing2')", [], []),
    ("redis.call('set', 'a', '1'); return redis.call('mget', 'a', 'missing')", [], []),
    ("return redis.call('exists', 'missing')", [], []),
    # RESP3 inside the script
    ("redis.setresp(3); return redis.call('get', 'missing')", [], []),
    ("redis.setresp(3); return type(redis.call('get', 'missing'))", [], []),
    ("redis.setresp(3); return redis.call('config', 'get', 'maxmemory-policy')", [], []),
    ("redis.setresp(3); local r = redis.call('config', 'get', 'maxmemory-policy'); "
     "return type(r.map)", [], []),
    ("return redis.setresp(4)", [], []),
    ("return redis.setresp()", [], []),
    # errors
    ("return redis.call('nosuch')", [], []),
    ("local x = 1\nredis.call('nosuch')", [], []),
    ("return redis.pcall('nosuch')", [], []),
    ("return {pcall(redis.call, 'nosuch')}", [], []),
    ("local ok, e = pcall(redis.call, 'nosuch'); return type(e)", [], []),
    ("local ok, e = pcall(redis.call, 'nosuch'); error(e, 0)", [], []),
    ("local e = redis.pcall('nosuch'); local r = {} "
     "for k, v in pairs(e) do r[#r + 1] = k end table.sort(r) return r", [], []),
    ("return redis.call('get')", [], []),
    ("return redis.call('get', 'a', 'b')", [], []),
    ("return redis.call('ping', 'a', 'b')", [], []),
    ("return redis.call()", [], []),
    ("return redis.call({})", [], []),
    ("return redis.call('set', 'a', {})", [], []),
    ("return redis.call('set', 'a', true)", [], []),
    ("return redis.call('eval', 'return 1', 0)", [], []),
    ("return redis.call('multi')", [], []),
    ("return redis.call('watch', 'x')", [], []),
    ("return redis.call('script', 'load', 'return 1')", [], []),
    ("return redis.call('config', 'nosuch')", [], []),
    ("return redis.call('config')", [], []),
    ("redis.call('set', 'str', 'x'); return redis.call('incr', 'str')", [], []),
    ("redis.call('set', 'str', 'x'); return redis.pcall('incr', 'str')", [], []),
    ("error('x')", [], []),
    ("error('MYCODE x', 0)", [], []),
    ("error({err = 'MY bad'})", [], []),
    ("error(5)", [], []),
    ("error()", [], []),
    ("local a = nil\nreturn a + 1", [], []),
    ("return 1 +", [], []),
    ("return (", [], []),
    ("local ok, e = pcall(error, {err = 'x'}); return type(e)", [], []),
    ("local ok, e = pcall(error, {foo = 'x'}); return type(e)", [], []),
    ("return {pcall(function() return 1, 2 end)}", [], []),
    # the sandbox
    ("return foo", [], []),
    ("foo = 1", [], []),
    ("return {pcall(function() redis.call = nil end)}", [], []),
    ("return {pcall(rawset, _G, 'x', 1)}", [], []),
    ("return {pcall(setmetatable, _G, nil)}", [], []),
    ("string.upper = nil", [], []),
    ("return tostring(getmetatable('').__index == string)", [], []),
    ("return type(getmetatable(string))", [], []),
    ("return type(getmetatable(_G))", [], []),
    ("return ('abc'):upper()", [], []),
    ("KEYS[1] = 'y'; return KEYS[1]", ["x"], []),
    ("return loadstring('return 7')()", [], []),
    ("return {loadstring(string.dump(function() return 1 end))}", [], []),
    ("return type(loadstring)", [], []),
    ("return _VERSION", [], []),
    *[(f"return type({name})", [], []) for name in (
        "os", "io", "debug", "require", "dofile", "loadfile", "setfenv", "getfenv",
        "newproxy", "module", "print", "package", "python", "jit",
        "coroutine", "unpack", "collectgarbage", "gcinfo", "string", "table", "math",
        "cjson", "cmsgpack", "bit", "struct", "redis", "load", "xpcall",
    )],
    # redis.*
    ("return redis.sha1hex('')", [], []),
    ("return redis.sha1hex('abc')", [], []),
    ("return redis.sha1hex(123)", [], []),
    ("redis.log(redis.LOG_WARNING, 'from a script'); return 1", [], []),
    ("return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_REPLICA, redis.REPL_ALL}", [], []),
    ("redis.set_repl(redis.REPL_ALL); return 1", [], []),
    ("return redis.replicate_commands()", [], []),
    # cjson
    ("return cjson.encode({1, 2, 3, {a = 'x/y'}})", [], []),
    ("return cjson.encode({})", [], []),
    ("return cjson.encode({[1] = 1, [3] = 3})", [], []),
    ("return cjson.encode({[1] = 1, [30] = 3})", [], []),
    ("return cjson.encode({a = 1, b = 2, c = 3, d = {1.5, 0.1, 1e100, -0}})", [], []),
    ("return cjson.encode('a\"b\\\\c\\n\\t\\1\\127')", [], []),
    ("return cjson.encode(1/0)", [], []),
    ("return cjson.encode({[true] = 1})", [], []),
    ("return cjson.encode(function() end)", [], []),
    ("return cjson.encode(cjson.null)", [], []),
    ("return cjson.decode('{\"a\":[1,2,{\"b\":null}]}').a[3].b == cjson.null", [], []),
    ("return cjson.decode('x')", [], []),
    ("return cjson.decode('{\"a\":1}x')", [], []),
    ("return cjson.decode('123456789012345678')", [], []),
    ("return tostring(cjson.decode('1.5'))", [], []),
    ("return cjson.encode(cjson.decode('{\"x\":[]}'))", [], []),
    ("return cjson.decode(ARGV[1]).name", [], ['{"name":"hotkv","n":[1,2]}']),
    # cjson.decode's own argument checks, and its null as Redis's (a NULL light userdata)
    ("return cjson.decode()", [], []),
    ("return cjson.decode('1', 2)", [], []),
    ("return cjson.decode({})", [], []),
    ("return cjson.decode(nil)", [], []),
    ("return tostring(cjson.decode(1e100))", [], []),
    ("return {tostring(cjson.null), type(cjson.null), getmetatable(cjson.null) == nil}", [], []),
    ("local v, n = cjson.decode(string.rep('[', 1000) .. string.rep(']', 1000)), 0 "
     "while type(v) == 'table' do v, n = v[1], n + 1 end return n", [], []),
    # the libraries' and the base functions' argument errors, worded and placed as Redis's
    # C functions word them (named '?' through pcall), never a Python exception's text
    ("return struct.pack()", [], []),
    ("return struct.unpack()", [], []),
    ("return struct.unpack('b', nil)", [], []),
    ("return struct.unpack('b', 'x', {})", [], []),
    ("return struct.size(nil)", [], []),
    ("return struct.size('1by')", [], []),
    ("return struct.pack('>d', 'x')", [], []),
    ("return struct.pack('>d', ' 0x10 ')", [], []),
    ("return struct.pack('y')", [], []),
    ("local ok, e = pcall(struct.pack, true) return e", [], []),
    ("return cmsgpack.pack()", [], []),
    ("return cmsgpack.unpack({})", [], []),
    ("return cmsgpack.unpack_one(nil)", [], []),
    ("return cmsgpack.unpack_limit('x')", [], []),
    ("return cmsgpack.unpack_limit('x', {})", [], []),
    ("return {cmsgpack.unpack_limit('abc', 0, 1)}", [], []),
    ("return {cmsgpack.unpack_one(cmsgpack.pack(1, 2), 1)}", [], []),
    ("return bit.band(nil)", [], []),
    ("return bit.tobit(true)", [], []),
    ("local ok, e = pcall(bit.bor, 1, {}) return e", [], []),
    ("local ok, e = pcall(cjson.decode, {}) return e", [], []),
    ("local ok, e = pcall(cjson.encode) return e", [], []),
    ("return redis.sha1hex(true)", [], []),
    ("local ok, e = pcall(redis.sha1hex) return e", [], []),
    ("local ok, e = pcall(redis.log) return e", [], []),
    ("return redis.error_reply(1.5)", [], []),
    ("return redis.status_reply('x', 'y')", [], []),
    ("return type(redis.error_reply())", [], []),
    ("return redis.set_repl(nil)", [], []),
    ("redis.set_repl()", [], []),
    ("local ok, e = pcall(redis.set_repl, 9) return e", [], []),
    ("return redis.acl_check_cmd({})", [], []),
    ("setmetatable(1)", [], []),
    ("local x = setmetatable({}) return x", [], []),
    ("local ok, e = pcall(setmetatable, {}, 5) return e", [], []),
    ("local x = rawset({}, 1) return x", [], []),
    ("local x = loadstring({}) return x", [], []),
    ("local x = getmetatable() return x", [], []),
    ("local t = setmetatable({}, {__metatable = 1}) setmetatable(t, {})", [], []),
    # CR/LF in an error cannot end its line (and slip in a reply); binary status replies
    ("error('x\\r\\n+OK')", [], []),
    ("return redis.error_reply('a\\r\\nb\\r\\n')", [], []),
    ("return {redis.error_reply('a\\nb'), redis.status_reply('c\\r\\nd')}", [], []),
    ("return {redis.status_reply('a\\0b'), redis.status_reply(string.char(0xa1, 0xff))}",
     [], []),
    ("return struct.size('a\\r\\nb')", [], []),
    # cmsgpack
    ("return cmsgpack.pack({1, 2, {a = 1}}, 'x', 1.5, true, nil)", [], []),
    ("return {cmsgpack.unpack(cmsgpack.pack(1, 'a', {1, 2}))}", [], []),
    ("return cmsgpack.pack(0.5)", [], []),
    ("return cmsgpack.pack(0.1)", [], []),
    ("return cmsgpack.pack(-1, 300, 2^40, -200)", [], []),
    ("return cmsgpack.pack(string.rep('x', 40))", [], []),
    # bit
    ("return bit.band(0xff, 0x0f)", [], []),
    ("return bit.tohex(-1)", [], []),
    ("return bit.tohex(255, -4)", [], []),
    ("return bit.tobit(2^32 + 5)", [], []),
    ("return bit.lshift(1, 31)", [], []),
    ("return bit.bnot(0)", [], []),
    ("return bit.rol(0x12345678, 12)", [], []),
    ("return bit.ror(0x12345678, 12)", [], []),
    ("return bit.bswap(0x12345678)", [], []),
    ("return bit.arshift(-256, 4)", [], []),
    ("return bit.rshift(-256, 4)", [], []),
    ("return bit.bxor(5, 3, 1)", [], []),
    ("return bit.band()", [], []),
    # struct
    ("return struct.pack('>I2', 258)", [], []),
    ("return {struct.unpack('<i4', struct.pack('<i4', -5))}", [], []),
    ("return struct.size('>iIhb')", [], []),
    ("return {struct.unpack('>hBs', struct.pack('>hBs', -2, 7, 'abc'))}", [], []),
    ("return struct.pack('>d', 1.5)", [], []),
    # shebang flags and read-only scripts
    ("#!lua flags=no-writes\nreturn redis.call('set', 'x', 1)", [], []),
    ("#!lua flags=no-writes\nreturn redis.call('get', 'x')", [], []),
    ("#!lua flags=foo\nreturn 1", [], []),
    ("#!lua\nreturn 1", [], []),
    ("#!luax\nreturn 1", [], []),
    ("#!lua x=y\nreturn 1", [], []),
]

#: whole commands, compared the same way
CALLS: list[list[str]] = [
    ["EVAL", "return 1", "3", "a", "b"],
    ["EVAL", "return 1", "-1"],
    ["EVAL", "return 1", "abc"],
    ["EVAL", "return 1", "01", "a"],
    ["EVAL", "return 1", "+1", "a"],
    ["EVAL", "return {KEYS[1], ARGV[1], #KEYS, #ARGV}", "1", "a", "b"],
    ["EVAL", "return {#KEYS, #ARGV}", "0", "a", "b"],
    # many keys and arguments reach Lua another way (two tables instead of varargs)
    ["EVAL", "return {#KEYS, #ARGV, KEYS[1], KEYS[150], ARGV[1], ARGV[150], KEYS[151]}", "150",
     *[f"k{i}" for i in range(1, 151)], *[f"a{i}" for i in range(1, 151)]],
    ["EVAL", "return {#KEYS, #ARGV, KEYS[1], KEYS[199], ARGV[1], tostring(ARGV[2])}", "199",
     *[f"k{i}" for i in range(1, 200)], "a1"],
    ["EVAL", "return {KEYS[10], ARGV[1]}", "10", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"],
    ["EVAL", "return 1"],
    ["EVALSHA", "abc", "0"],
    ["EVALSHA", "0123456789012345678901234567890123456789", "0"],
    ["SCRIPT", "LOAD", "return 'loaded'"],
    ["EVALSHA", "0d6e5a2a4ccd8a0b6ee3ff05e0fd8d32f13b3a1d", "0"],
    ["SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "ffff"],
    ["SCRIPT", "LOAD", "return 1 +"],
    ["SCRIPT", "FLUSH", "foo"],
    ["SCRIPT", "FLUSH", "ASYNC"],
    ["SCRIPT", "FLUSH"],
    ["SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"],
    ["SCRIPT", "KILL"],
    ["SCRIPT", "NOSUCH"],
    ["SCRIPT"],
    ["EVAL_RO", "return redis.call('set', 'x', 1)", "0"],
    ["EVAL_RO", "return redis.call('get', KEYS[1])", "1", "x"],
    ["SCRIPT", "LOAD", "return redis.call('set', 'ro', 1)"],
    ["EVALSHA_RO", "1c0f3b0e85a82fd2a30e2b2b2fd16b06ad7ec4df", "0"],
    ["COMMAND", "GETKEYS", "EVAL", "return 1", "2", "a", "b", "c"],
    ["COMMAND", "GETKEYSANDFLAGS", "EVAL_RO", "return 1", "1", "a"],
]


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def both(request: pytest.FixtureRequest, server: HotkvProcess,
         reference: RedisServer) -> Iterator[tuple[RespConnection, RespConnection]]:
    hot = RespConnection(server.port, request.param)
    ref = RespConnection(reference.port, request.param)
    for conn in (hot, ref):
        conn.call(["FLUSHALL"])
        conn.call(["SCRIPT", "FLUSH"])
    try:
        yield hot, ref
    finally:
        hot.close()
        ref.close()


def test_scripts_reply_as_redis(both: tuple[RespConnection, RespConnection]) -> None:
    hot, ref = both
    differences = []
    for script, keys, args in SCRIPTS:
        argv = ["EVAL", script, str(len(keys)), *keys, *args]
        for conn in (hot, ref):
            conn.call(["FLUSHALL"])
        mine, theirs = hot.call(argv), ref.call(argv)
        if mine != theirs:
            differences.append((script, mine, theirs))
    assert differences == []


def test_script_commands_reply_as_redis(both: tuple[RespConnection, RespConnection]) -> None:
    hot, ref = both
    differences = []
    for argv in CALLS:
        mine, theirs = hot.call(argv), ref.call(argv)
        if mine != theirs:
            differences.append((argv, mine, theirs))
    assert differences == []


def test_script_cache_and_evalsha_as_redis(both: tuple[RespConnection, RespConnection]) -> None:
    hot, ref = both
    body = "return {KEYS[1], ARGV[1], redis.call('incr', KEYS[1])}"
    assert hot.call(["SCRIPT", "LOAD", body]) == ref.call(["SCRIPT", "LOAD", body]) == (
        "$", _sha(body).encode())
    steps = [
        ["EVALSHA", _sha(body).upper(), "1", "counter", "x"],
        ["EVALSHA", "9bd32b4d3b2e8b5d2cf4efb3b6ac0e4f3d9a54f2", "0"],
        ["EVAL", body, "1", "c2", "y"],
        ["SCRIPT", "EXISTS", _sha(body), _sha("nope")],
        ["EVALSHA", _sha(body), "1", "c2", "z"],
        ["SCRIPT", "FLUSH", "SYNC"],
        ["EVALSHA", _sha(body), "1", "c2", "z"],
    ]
    for argv in steps:
        assert hot.call(argv) == ref.call(argv), argv


def test_multi_exec_with_eval_as_redis(both: tuple[RespConnection, RespConnection]) -> None:
    hot, ref = both
    steps = [
        ["MULTI"],
        ["SET", "m", "1"],
        ["EVAL", "return redis.call('incr', KEYS[1])", "1", "m"],
        ["EVAL", "return redis.call('nosuch')", "0"],
        ["EXEC"],
        ["GET", "m"],
        ["WATCH", "w"],
        ["EVAL", "return redis.call('set', KEYS[1], 'by-script')", "1", "w"],
        ["MULTI"],
        ["GET", "w"],
        ["EXEC"],
    ]
    for argv in steps:
        assert hot.call(argv) == ref.call(argv), argv


def _sha(body: str) -> str:
    import hashlib

    return hashlib.sha1(body.encode()).hexdigest()


#: scripts that end in an error reply, each its own way (see test_script_errors_count_as_redis)
FAILING = [
    "return redis.error_reply('MY bad')",  # an error table of the script's: counted
    "return {err = 'OTHER thing'}",
    "return redis.call('INCR', KEYS[1])",  # INCR's error, counted by INCR: not again
    "return redis.pcall('INCR', KEYS[1])",  # the same, returned as a table by pcall
    "redis.call('INCR', KEYS[1])",
    "error('boom')",  # a Lua error: counted (as ERR)
    "return {1, redis.pcall('INCR', KEYS[1])}",  # inside an array: still a failed call
    "return {1, {err = 'INNER one'}}",  # a nested error table of the script's: counted
]

#: past busy-reply-threshold (50 ms below), then INCR's error: hotkv answers through a
#: Deferred from its script thread, and its error was counted twice before
SLOW_FAILING = ("local t0 = redis.call('TIME') local s0 = t0[1] * 1000000 + t0[2] "
                "repeat local t = redis.call('TIME') until t[1] * 1000000 + t[2] - s0 > 200000 "
                "return redis.call('INCR', KEYS[1])")


def _error_counters(conn: RespConnection) -> dict[str, object]:
    def section(name: str) -> dict[str, str]:
        reply = conn.call(["INFO", name])  # a tagged tree: (type, text); RESP3: verbatim
        text = reply[-1] if isinstance(reply, tuple) else reply
        raw = text.decode() if isinstance(text, bytes) else str(text)
        raw = raw[4:] if raw.startswith("txt:") else raw
        return dict(line.split(":", 1) for line in raw.splitlines() if ":" in line)

    stats, commands = section("stats"), section("commandstats")
    evals = dict(part.split("=") for part in commands["cmdstat_eval"].split(","))
    return {"errorstats": section("errorstats"), "total": stats["total_error_replies"],
            "eval calls": evals["calls"], "eval failed": evals["failed_calls"]}


def test_script_errors_count_as_redis(both: tuple[RespConnection, RespConnection]) -> None:
    """INFO errorstats, total_error_replies and EVAL's failed_calls after scripts that
    fail: a script's own error replies count, an error a redis.call made counted once, and
    EVAL failed either way (Redis 7's ERR_REPLY_FLAG_NO_STATS_UPDATE)."""
    hot, ref = both
    seen = []
    for conn in (hot, ref):
        conn.call(["CONFIG", "RESETSTAT"])
        for script in FAILING:
            conn.call(["SET", "s", "abc"])
            conn.call(["EVAL", script, "1", "s"])
        conn.call(["CONFIG", "SET", "busy-reply-threshold", "50"])
        try:
            conn.call(["EVAL", SLOW_FAILING, "1", "s"])
        finally:
            conn.call(["CONFIG", "SET", "busy-reply-threshold", "5000"])
        seen.append(_error_counters(conn))
    assert seen[0] == seen[1]
    assert seen[1]["eval failed"] == str(len(FAILING) + 1)  # every one, the slow one too
