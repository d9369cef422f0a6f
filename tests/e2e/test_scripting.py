"""Scripting end to end on a real hotkv-server: BUSY and SCRIPT KILL, atomicity, the
sandbox refusing escapes, ACL, and a script's writes reaching the AOF, a restart and a
replica as effects (never the script).

The replies' exact texts are checked against redis-server in test_differential_scripting.py;
these tests cover what needs a process of its own (a long script, a data directory, two
servers).
"""

from __future__ import annotations

import glob
import os
import threading
from typing import Any

import pytest
import redis

from helpers import HotkvProcess
from replication.rhelpers import link_up, wait_until

LOOP = "local i = 0 while true do i = i + 1 end"


@pytest.fixture
def busy_server() -> Any:
    proc = HotkvProcess("--busy-reply-threshold", "200").start()
    try:
        yield proc
    finally:
        proc.cleanup()


def _run_in_thread(client: redis.Redis, *args: Any) -> tuple[threading.Thread, list[Any]]:
    box: list[Any] = []

    def target() -> None:
        try:
            box.append(client.execute_command(*args))
        except Exception as exc:  # the reply of a killed script is an error
            box.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, box


def _wait_busy(client: redis.Redis) -> None:
    def busy() -> bool:
        try:
            client.ping()
        except redis.exceptions.BusyLoadingError:
            return True
        except redis.ResponseError as exc:
            return str(exc).startswith("BUSY")
        return False

    wait_until(busy, timeout=10, what="the server answering BUSY")


@pytest.mark.parametrize("protocol", [2, 3])
def test_busy_replies_and_script_kill(busy_server: HotkvProcess, protocol: int) -> None:
    runner = busy_server.client(protocol=protocol, socket_timeout=20)
    other = busy_server.client(protocol=protocol)
    other.set("k", "v")
    thread, box = _run_in_thread(runner, "EVAL", LOOP, 0)
    _wait_busy(other)
    with pytest.raises(redis.ResponseError, match=r"^BUSY Redis is busy running a script"):
        other.execute_command("GET", "k")
    # a client that connects now is answered too (SCRIPT KILL usually comes from a new one)
    fresh = busy_server.client(protocol=protocol)
    assert fresh.execute_command("MULTI") in (b"OK", "OK", True)  # allow_busy commands pass
    assert fresh.execute_command("DISCARD") in (b"OK", "OK", True)
    assert fresh.execute_command("SCRIPT", "KILL") in (b"OK", "OK", True)
    thread.join(10)
    assert not thread.is_alive()
    (outcome,) = box
    assert isinstance(outcome, redis.ResponseError)
    assert str(outcome).startswith("Script killed by user with SCRIPT KILL... script: ")
    assert other.get("k") == b"v"
    with pytest.raises(redis.ResponseError, match=r"^NOTBUSY"):
        other.execute_command("SCRIPT", "KILL")
    # a pcall cannot keep a killed script alive
    thread, box = _run_in_thread(runner, "EVAL",
                                 "while true do pcall(function() local x = 1 end) end", 0)
    _wait_busy(other)
    other.execute_command("SCRIPT", "KILL")
    thread.join(10)
    assert isinstance(box[0], redis.ResponseError)
    assert other.execute_command("EVAL", "return 7", 0) == 7


def test_a_script_that_wrote_is_unkillable_and_shutdown_nosave_ends_it(
    busy_server: HotkvProcess,
) -> None:
    runner = busy_server.client(socket_timeout=20)
    other = busy_server.client()
    _run_in_thread(runner, "EVAL", "redis.call('set', 'w', '1') while true do end", 0)
    _wait_busy(other)
    with pytest.raises(redis.ResponseError, match=r"^UNKILLABLE Sorry the script already executed"):
        other.execute_command("SCRIPT", "KILL")
    with pytest.raises(redis.ResponseError, match=r"^BUSY"):
        other.execute_command("SHUTDOWN")
    with pytest.raises(redis.ConnectionError):
        other.execute_command("SHUTDOWN", "NOSAVE")
    assert busy_server.proc is not None
    busy_server.proc.wait(15)


def test_nothing_else_runs_while_a_script_runs(server: HotkvProcess) -> None:
    """Atomicity: a script of many INCRs is never interleaved with other clients' writes."""
    r = server.client()
    r.delete("counter", "log")
    script = ("for i = 1, 2000 do redis.call('incr', KEYS[1]) end "
              "return redis.call('get', KEYS[1])")
    seen: list[int] = []

    def writer() -> None:
        c = server.client()
        for _ in range(200):
            seen.append(int(c.incr("counter")))

    thread = threading.Thread(target=writer)
    thread.start()
    results = [int(r.eval(script, 1, "counter")) for _ in range(5)]
    thread.join()
    # every value the writer saw is outside a script's run of 2000 consecutive increments
    for total in results:
        block = set(range(total - 1999, total))
        assert not block & set(seen)
    assert int(r.get("counter")) == 5 * 2000 + 200


@pytest.mark.parametrize("body", [
    "return os.execute('id')",
    "return io.open('/etc/passwd')",
    "return require('os')",
    "return dofile('/etc/passwd')",
    "return loadfile('/etc/passwd')",
    "return debug.getregistry()",
    "return python.eval('1')",
    "return getfenv(1)",
    "return setfenv(1, {})",
    "return newproxy(true)",
    "return package.loaded",
    "return loadstring(string.dump(function() return 1 end))()",
    "return loadstring('return os')()",
    "return redis.call.__class__",
    "return cjson.encode.__globals__",
    "return getmetatable('').__index.gsub == nil",
    "rawset(getmetatable(_G), '__index', nil)",
    "return coroutine.wrap(function() return os end)()",
])
def test_sandbox_escapes_are_refused(server: HotkvProcess, body: str) -> None:
    r = server.client()
    try:
        reply = r.eval(body, 0)
    except redis.ResponseError as exc:
        text = str(exc)
        assert "script: " in text  # a script error, never an internal one
        assert "internal error" not in text
    else:
        assert reply in (None, 0)  # the expression found nothing it could use
    assert r.ping()


def test_globals_stay_protected_across_scripts(server: HotkvProcess) -> None:
    r = server.client()
    with pytest.raises(redis.ResponseError, match=r"Attempt to modify a readonly table"):
        r.eval("redis.call = function() return 'hijacked' end", 0)
    with pytest.raises(redis.ResponseError, match=r"Attempt to modify a readonly table"):
        r.eval("string.rep = nil", 0)
    r.set("x", "1")
    assert r.eval("return redis.call('get', 'x')", 0) == b"1"
    assert r.eval("return string.rep('a', 3)", 0) == b"aaa"


def test_scripts_obey_acl(server: HotkvProcess) -> None:
    admin = server.client()
    admin.execute_command("ACL", "SETUSER", "tenant", "on", ">pw", "~t:*", "+@all", "-flushall")
    admin.execute_command("ACL", "SETUSER", "noscript", "on", ">pw", "~*", "+@all", "-@scripting")
    try:
        t = server.client(username="tenant", password="pw")
        assert t.eval("return redis.call('set', KEYS[1], 'v')", 1, "t:a") == b"OK"
        with pytest.raises(redis.ResponseError, match=r"(?i)permissions"):
            t.eval("return 1", 1, "other:a")  # EVAL's own keys are checked
        with pytest.raises(redis.ResponseError,
                           match=r"The user executing the script can't access at least one"):
            t.eval("return redis.call('get', 'other:a')", 0)
        with pytest.raises(redis.ResponseError,
                           match=r"The user executing the script can't run this command"):
            t.eval("return redis.call('flushall')", 0)
        n = server.client(username="noscript", password="pw")
        with pytest.raises(redis.ResponseError, match=r"(?i)permissions"):
            n.eval("return 1", 0)
    finally:
        admin.execute_command("ACL", "DELUSER", "tenant", "noscript")


def test_a_long_script_inside_multi_exec(busy_server: HotkvProcess) -> None:
    """EXEC waits for a script past the limit (others get BUSY meanwhile), then answers."""
    runner = busy_server.client(socket_timeout=20)
    other = busy_server.client()
    pipe = runner.pipeline(transaction=True)
    pipe.set("before", "1")
    pipe.eval("local t = redis.call('time')[1] + 0 local i = 0 "
              "while i < 3000000 do i = i + 1 end return redis.call('incr', 'after')", 0)
    pipe.get("before")
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(pipe.execute()), daemon=True)
    thread.start()
    thread.join(20)
    assert box == [[True, 1, b"1"]]
    assert other.get("after") == b"1"


def _aof_bytes(directory: str) -> bytes:
    data = b""
    for path in glob.glob(os.path.join(directory, "**", "*"), recursive=True):
        if os.path.isfile(path) and "aof" in os.path.basename(path).lower():
            with open(path, "rb") as fh:
                data += fh.read()
    return data


SCRIPT = ("local n = redis.call('incr', KEYS[1]) "
          "redis.call('set', KEYS[2], 'marker-from-a-script-' .. n) "
          "redis.call('pexpire', KEYS[2], ARGV[1]) "
          "return n")


def test_aof_and_restart_get_the_effects_not_the_script(tmp_path: Any) -> None:
    proc = HotkvProcess("--appendonly", "yes", "--appendfsync", "always", dir=str(tmp_path)).start()
    try:
        r = proc.client()
        for _ in range(3):
            r.eval(SCRIPT, 2, "n", "m", 600000)
        with pytest.raises(redis.ResponseError):
            r.eval("redis.call('set', 'half', '1') error('stop')", 0)  # no rollback, as Redis
        ttl = r.pttl("m")
        log = _aof_bytes(str(tmp_path))
        assert b"marker-from-a-script-3" in log
        assert b"redis.call" not in log  # the effects were logged, not the script
        proc.restart()
        r = proc.client()
        assert r.get("n") == b"3"
        assert r.get("m") == b"marker-from-a-script-3"
        assert r.get("half") == b"1"
        assert 0 < r.pttl("m") <= ttl
    finally:
        proc.cleanup()


def test_a_replica_gets_the_effects(tmp_path: Any) -> None:
    os.makedirs(tmp_path / "p", exist_ok=True)
    primary = HotkvProcess(dir=str(tmp_path / "p")).start()
    os.makedirs(tmp_path / "r", exist_ok=True)
    replica = HotkvProcess("--replicaof", "127.0.0.1", str(primary.port),
                           dir=str(tmp_path / "r")).start()
    try:
        p, rr = primary.client(), replica.client()
        wait_until(lambda: link_up(rr), what="the replica link")
        for _ in range(2):
            p.eval(SCRIPT, 2, "n", "m", 600000)
        p.execute_command("SCRIPT", "FLUSH")  # the replica must not need the script
        wait_until(lambda: rr.get("m") == b"marker-from-a-script-2", what="the replica's copy")
        assert rr.get("n") == b"2"
        # a script on the replica may read, and its writes are refused as any write
        assert rr.eval("return redis.call('get', 'n')", 0) == b"2"
        with pytest.raises(redis.ResponseError, match=r"read only replica. script: "):
            rr.eval("return redis.call('set', 'n', 0)", 0)
    finally:
        replica.cleanup()
        primary.cleanup()


def test_a_quick_script_that_turns_long_is_moved_off_the_loop(busy_server: HotkvProcess) -> None:
    """A script whose last run was quick runs on the event-loop thread; past the limit and
    before any write it is abandoned and run again on the script thread, so BUSY and SCRIPT
    KILL work for it as for any other."""
    runner = busy_server.client(socket_timeout=20)
    other = busy_server.client()
    body = "if ARGV[1] == 'loop' then while true do end end return redis.call('get', 'k')"
    other.set("k", "v")
    assert runner.eval(body, 0, "once") == b"v"  # on the script thread, quick
    assert runner.eval(body, 0, "again") == b"v"  # now on the loop thread
    thread, box = _run_in_thread(runner, "EVAL", body, 0, "loop")
    _wait_busy(other)
    other.execute_command("SCRIPT", "KILL")
    thread.join(10)
    assert isinstance(box[0], redis.ResponseError)
    assert str(box[0]).startswith("Script killed by user with SCRIPT KILL")
    assert runner.eval(body, 0, "after") == b"v"
