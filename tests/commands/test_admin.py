"""INFO, CONFIG, FLUSHALL/FLUSHDB, TIME, LASTSAVE, SLOWLOG, MONITOR, SHUTDOWN, DEBUG SLEEP,
SAVE/BGSAVE/BGREWRITEAOF: end to end through redis-py (RESP2 and RESP3) and redis-cli, and
in process where a subsystem's hook (INFO sections, persistence, CONFIG listeners) is the
thing under test.
"""

from __future__ import annotations

import re
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from helpers import HotkvProcess, RedisServer, raw_roundtrip, record, require_tool
from helpers import raw_reply as raw
from hotkv_server.commands import load_all
from hotkv_server.commands.admin import NO_PERSISTENCE
from hotkv_server.engine.clock import ManualClock
from hotkv_server.engine.config import ConfigError, load_config
from hotkv_server.engine.context import Context
from hotkv_server.engine.core import Core, Subsystem
from hotkv_server.engine.dispatch import dispatch
from hotkv_server.server.resp import ErrorReply, Verbatim


def error(client: redis.Redis, *args: Any) -> str:
    with pytest.raises(redis.ResponseError) as info:
        raw(client, *args)
    return str(info.value)


def headers(text: bytes) -> list[str]:
    return re.findall(r"^# (\w+)\r$", text.decode(), flags=re.M)


def fields(text: bytes) -> dict[str, str]:
    out = {}
    for line in text.decode().split("\r\n"):
        if line and not line.startswith("#"):
            name, _, value = line.partition(":")
            out[name] = value
    return out


# --- INFO -------------------------------------------------------------------------------


def test_info_default_sections_and_format(r: redis.Redis) -> None:
    text = raw(r, "INFO")
    assert headers(text) == [
        "Server", "Clients", "Memory", "Persistence", "Stats", "Replication", "CPU",
        "Errorstats", "Cluster", "Keyspace", "Amem",
    ]
    # CRLF lines, one blank line between sections, none after the last
    assert b"\n" not in text.replace(b"\r\n", b"")
    assert b"\r\n\r\n# Clients\r\n" in text
    assert text.endswith(b"\r\n") and not text.endswith(b"\r\n\r\n")


def test_info_sections_by_name(r: redis.Redis) -> None:
    assert headers(raw(r, "INFO", "clients", "SERVER")) == ["Server", "Clients"]
    assert raw(r, "INFO", "nosuch") == b""
    everything = headers(raw(r, "INFO", "everything"))
    assert headers(raw(r, "INFO", "all")) == everything
    assert "Commandstats" in everything and "Amem" in everything
    assert headers(raw(r, "INFO", "default")) == headers(raw(r, "INFO"))


def test_info_server_fields(r: redis.Redis, server: HotkvProcess) -> None:
    info = r.info("server")
    assert info["redis_version"] == "7.0.0"
    assert info["redis_mode"] == "standalone"
    assert info["tcp_port"] == server.port
    assert info["process_id"] == server.proc.pid  # type: ignore[union-attr]
    assert info["arch_bits"] in (32, 64)
    assert re.fullmatch(r"[0-9a-f]{40}", info["run_id"])
    assert info["uptime_in_seconds"] >= 0
    assert "hotkv_version" in info


def test_info_clients_memory_persistence_replication(r: redis.Redis) -> None:
    info = r.info("default")
    assert info["connected_clients"] >= 1
    assert info["maxclients"] == 10000
    assert info["used_memory"] > 0
    assert re.fullmatch(r"\d+(\.\d\d[KMGTPE]|B)", info["used_memory_human"])
    assert info["maxmemory"] == 0 and info["maxmemory_policy"] == "noeviction"
    assert info["loading"] == 0
    assert info["aof_enabled"] == 0  # the test server runs with --appendonly no
    assert info["role"] == "master"
    assert info["connected_slaves"] == 0
    assert info["cluster_enabled"] == 0


def test_info_stats_count_commands_and_keyspace_lookups(r: redis.Redis) -> None:
    before = r.info("stats")
    r.set("k", "v")
    r.get("k")
    r.get("missing")
    after = r.info("stats")
    assert after["total_commands_processed"] >= before["total_commands_processed"] + 4
    assert after["keyspace_hits"] >= before["keyspace_hits"] + 1
    assert after["keyspace_misses"] >= before["keyspace_misses"] + 1


def test_info_keyspace(r: redis.Redis) -> None:
    assert raw(r, "INFO", "keyspace") == b"# Keyspace\r\n"
    r.set("a", "1")
    r.set("b", "2", ex=100)
    assert raw(r, "INFO", "keyspace") == b"# Keyspace\r\ndb0:keys=2,expires=1,avg_ttl=0\r\n"
    assert r.info("keyspace")["db0"] == {"keys": 2, "expires": 1, "avg_ttl": 0}


def test_info_commandstats_and_errorstats(r: redis.Redis) -> None:
    r.get("x")
    r.get("x")
    stats = fields(raw(r, "INFO", "commandstats"))
    get = dict(kv.split("=") for kv in stats["cmdstat_get"].split(","))
    assert list(get) == ["calls", "usec", "usec_per_call", "rejected_calls", "failed_calls"]
    assert int(get["calls"]) >= 2
    assert re.fullmatch(r"\d+\.\d\d", get["usec_per_call"])
    raw(r, "CONFIG", "GET", "port")
    assert "cmdstat_config|get" in fields(raw(r, "INFO", "commandstats"))

    before = fields(raw(r, "INFO", "errorstats")).get("errorstat_ERR", "count=0")
    assert error(r, "CONFIG", "GET") == "wrong number of arguments for 'config|get' command"
    after = fields(raw(r, "INFO", "errorstats"))["errorstat_ERR"]
    assert int(after.split("=")[1]) == int(before.split("=")[1]) + 1


def test_info_amem_counts_memories(r: redis.Redis) -> None:
    r.execute_command("AMEM.CONV.CREATE", "s1")
    r.execute_command("AMEM.CONV.APPEND", "s1", "user", "hello")
    amem = fields(raw(r, "INFO", "amem"))
    assert amem["conv_objects"] == "1"
    assert amem["conv_entries"] == "1"
    assert amem["work_objects"] == "0"


def test_info_resp3_is_a_verbatim_string(server: HotkvProcess) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(b"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n*2\r\n$4\r\nINFO\r\n$3\r\ncpu\r\n")
        data = b""
        while b"used_cpu_user_children" not in data or not data.endswith(b"\r\n"):
            data += sock.recv(65536)
    reply = data[data.index(b"=") :]
    size, _, body = reply.partition(b"\r\n")
    assert body.startswith(b"txt:# CPU\r\n")
    assert int(size[1:]) == len(body) - 2


# --- CONFIG ------------------------------------------------------------------------------


def test_config_get(r: redis.Redis, server: HotkvProcess) -> None:
    reply = raw(r, "CONFIG", "GET", "port")
    assert record(reply) == {b"port": str(server.port).encode()}
    if r.connection_pool.connection_kwargs.get("protocol") == 3:
        assert isinstance(reply, dict)
    else:
        assert isinstance(reply, list)
    both = record(raw(r, "CONFIG", "GET", "maxmemory*", "MAXMEMORY", "appendonly"))
    assert both == {b"maxmemory": b"0", b"maxmemory-policy": b"noeviction", b"appendonly": b"no",
                    b"maxmemory-samples": b"5",
                    b"maxmemory-clients": b"1073741824"}  # a hotkv default (Redis: 0)
    assert record(raw(r, "CONFIG", "GET", "nosuch")) == {}
    assert r.config_get("maxclients") in ({"maxclients": "10000"}, {b"maxclients": b"10000"})


@pytest.fixture
def restore_config(r: redis.Redis) -> Iterator[None]:
    names = ["maxclients", "timeout", "slowlog-log-slower-than", "slowlog-max-len", "appendfsync"]
    saved = record(raw(r, "CONFIG", "GET", *names))
    yield
    args = [x for pair in saved.items() for x in pair]
    raw(r, "CONFIG", "SET", *args)


def test_config_set(r: redis.Redis, restore_config: None) -> None:
    assert raw(r, "CONFIG", "SET", "maxclients", "500", "TIMEOUT", "30") == b"OK"
    assert record(raw(r, "CONFIG", "GET", "maxclients", "timeout")) == {
        b"maxclients": b"500", b"timeout": b"30",
    }
    assert r.info("clients")["maxclients"] == 500
    assert r.config_set("appendfsync", "always") is True


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nosuch", "1"], "Unknown option or number of arguments for CONFIG SET - 'nosuch'"),
        (["maxclients", "abc"],
         "CONFIG SET failed (possibly related to argument 'maxclients') - "
         "argument couldn't be parsed into an integer"),
        (["maxclients", "0"],
         "CONFIG SET failed (possibly related to argument 'maxclients') - "
         "argument must be between 1 and 1000000 inclusive"),
        (["dir", "/tmp"], "CONFIG SET failed (possibly related to argument 'dir') - can't set immutable config"),
        (["timeout", "1", "timeout", "2"],
         "CONFIG SET failed (possibly related to argument 'timeout') - duplicate parameter"),
        (["timeout", "1", "maxclients"], "wrong number of arguments for 'config|set' command"),
        (["appendfsync", "sometimes"],
         "CONFIG SET failed (possibly related to argument 'appendfsync') - "
         "argument(s) must be one of the following: everysec, always, no"),
    ],
)
def test_config_set_errors(r: redis.Redis, args: list[str], message: str) -> None:
    assert error(r, "CONFIG", "SET", *args) == message


def test_config_set_is_all_or_nothing(r: redis.Redis, restore_config: None) -> None:
    before = record(raw(r, "CONFIG", "GET", "maxclients"))
    assert "maxclients" not in error(r, "CONFIG", "SET", "maxclients", "77", "timeout", "x")
    assert record(raw(r, "CONFIG", "GET", "maxclients")) == before


def test_config_resetstat(r: redis.Redis) -> None:
    r.get("x")
    error(r, "GET")
    assert raw(r, "CONFIG", "RESETSTAT") == b"OK"
    stats = fields(raw(r, "INFO", "commandstats", "errorstats", "stats"))
    assert int(stats["total_commands_processed"]) <= 2  # RESETSTAT and maybe the INFO itself
    assert "cmdstat_get" not in stats
    assert not any(name.startswith("errorstat_") for name in stats)
    assert stats["total_error_replies"] == "0"


def test_config_rewrite_needs_a_file(r: redis.Redis) -> None:
    assert error(r, "CONFIG", "REWRITE") == "The server is running without a config file"


def test_config_help(r: redis.Redis) -> None:
    lines = raw(r, "CONFIG", "HELP")
    assert lines[0].startswith(b"CONFIG <subcommand>")
    assert b"REWRITE" in lines


# --- FLUSHALL, TIME, LASTSAVE ------------------------------------------------------------


def test_flushall_and_flushdb_empty_every_store(r: redis.Redis) -> None:
    r.set("a", "1")
    r.execute_command("AMEM.CONV.CREATE", "s1")
    assert r.flushall() is True
    assert r.dbsize() == 0
    assert fields(raw(r, "INFO", "amem"))["conv_objects"] == "0"
    r.set("a", "1")
    assert raw(r, "FLUSHDB", "ASYNC") == b"OK"
    assert r.dbsize() == 0
    assert raw(r, "FLUSHALL", "sync") == b"OK"
    assert error(r, "FLUSHALL", "foo") == "syntax error"
    assert error(r, "FLUSHDB", "ASYNC", "SYNC") == "syntax error"


def test_time(r: redis.Redis) -> None:
    seconds, micros = raw(r, "TIME")
    assert seconds.isdigit() and micros.isdigit()
    assert abs(int(seconds) - time.time()) < 5
    assert 0 <= int(micros) < 1_000_000
    s, us = r.time()
    assert abs(s + us / 1e6 - time.time()) < 5


def test_lastsave(r: redis.Redis) -> None:
    last = raw(r, "LASTSAVE")
    assert isinstance(last, int)
    assert time.time() - 3600 < last <= time.time() + 1
    assert r.lastsave().timestamp() == last


def test_bgsave_checks_its_argument(r: redis.Redis) -> None:
    assert error(r, "BGSAVE", "NOW") == "syntax error"


# --- SLOWLOG, DEBUG SLEEP -----------------------------------------------------------------


def test_slowlog(r: redis.Redis, restore_config: None, server: HotkvProcess) -> None:
    raw(r, "CLIENT", "SETNAME", "slowpoke")
    raw(r, "CONFIG", "SET", "slowlog-log-slower-than", "0")
    raw(r, "SLOWLOG", "RESET")  # logged itself: the threshold is 0
    r.set("slowkey", "v")
    [entry] = raw(r, "SLOWLOG", "GET", "1")
    entry_id, started, duration, argv, addr, name = entry
    assert argv == [b"SET", b"slowkey", b"v"]  # as the client sent it
    assert abs(started - time.time()) < 5
    assert duration >= 0
    assert addr.startswith(b"127.0.0.1:")
    assert name == b"slowpoke"
    every = raw(r, "SLOWLOG", "GET", "-1")
    assert [e[3] for e in every] == [
        [b"SLOWLOG", b"GET", b"1"], [b"SET", b"slowkey", b"v"], [b"SLOWLOG", b"RESET"],
    ]
    assert [e[0] for e in every] == [entry_id + 1, entry_id, entry_id - 1]
    assert raw(r, "SLOWLOG", "LEN") == 4  # and the GET -1
    parsed = r.slowlog_get(1)
    assert parsed[0]["command"] == b"SLOWLOG LEN"
    assert parsed[0]["client_name"] == b"slowpoke"
    raw(r, "CONFIG", "SET", "slowlog-log-slower-than", "-1")
    assert raw(r, "SLOWLOG", "RESET") == b"OK"
    assert raw(r, "SLOWLOG", "LEN") == 0
    assert raw(r, "SLOWLOG", "GET") == []


def test_slowlog_keeps_slowlog_max_len_entries(r: redis.Redis, restore_config: None) -> None:
    raw(r, "CONFIG", "SET", "slowlog-log-slower-than", "0", "slowlog-max-len", "3")
    for i in range(5):
        r.get(f"k{i}")
    assert raw(r, "SLOWLOG", "LEN") == 3
    assert [e[3] for e in raw(r, "SLOWLOG", "GET", "2")] == [[b"SLOWLOG", b"LEN"], [b"GET", b"k4"]]


def test_slowlog_errors_and_help(r: redis.Redis) -> None:
    assert error(r, "SLOWLOG", "GET", "-2") == "count should be greater than or equal to -1"
    assert error(r, "SLOWLOG", "GET", "x") == "count should be greater than or equal to -1"
    assert error(r, "SLOWLOG", "GET", "1", "2") == "syntax error"
    assert raw(r, "SLOWLOG", "HELP")[0].startswith(b"SLOWLOG <subcommand>")


def test_debug_sleep_lands_in_the_slowlog(r: redis.Redis, restore_config: None) -> None:
    raw(r, "CONFIG", "SET", "slowlog-log-slower-than", "20000")
    raw(r, "SLOWLOG", "RESET")
    started = time.monotonic()
    assert raw(r, "DEBUG", "SLEEP", "0.05") == b"OK"
    assert time.monotonic() - started >= 0.05
    [entry] = raw(r, "SLOWLOG", "GET")
    assert entry[3] == [b"DEBUG", b"SLEEP", b"0.05"]
    assert entry[2] >= 50_000
    assert error(r, "DEBUG", "SLEEP", "abc") == "invalid seconds 'abc': expected a number >= 0"
    assert error(r, "DEBUG", "FOO") == "unknown subcommand 'FOO'. Try DEBUG HELP."


# --- MONITOR -----------------------------------------------------------------------------


def _read_until(sock: socket.socket, needle: bytes, timeout: float = 5.0) -> bytes:
    data = b""
    deadline = time.monotonic() + timeout
    while needle not in data and time.monotonic() < deadline:
        try:
            data += sock.recv(65536)
        except TimeoutError:
            continue
    return data


def test_monitor_streams_other_clients_commands(r: redis.Redis, server: HotkvProcess) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=0.5) as mon:
        mon.sendall(b"*1\r\n$7\r\nMONITOR\r\n")
        assert _read_until(mon, b"\r\n").startswith(b"+OK\r\n")
        r.set("watched", 'say "hi"')
        line = _read_until(mon, b'hi\\""\r\n')
    assert re.match(
        rb'\+\d+\.\d{6} \[0 127\.0\.0\.1:\d+\] "SET" "watched" "say \\"hi\\""\r\n', line
    ), line


# --- SHUTDOWN (own server: it goes away) -------------------------------------------------


def test_shutdown_nosave_stops_the_server() -> None:
    proc = HotkvProcess().start()
    try:
        client = proc.client(protocol=2)
        assert error(client, "SHUTDOWN", "FOO") == "syntax error"
        assert error(client, "SHUTDOWN", "SAVE", "NOSAVE") == "syntax error"
        assert error(client, "SHUTDOWN", "ABORT") == "No shutdown in progress."
        assert client.ping() is True
        client.shutdown(nosave=True)
        assert proc.proc is not None
        assert proc.proc.wait(15) == 0
    finally:
        proc.cleanup()


# --- redis-cli -----------------------------------------------------------------------------


def test_redis_cli_info_and_config_get(server: HotkvProcess) -> None:
    require_tool("redis-cli")
    def cli(*args: str) -> bytes:
        done = subprocess.run(
            ["redis-cli", "-p", str(server.port), *args],
            capture_output=True, timeout=20, check=True,
        )
        return done.stdout

    # redis-cli prints INFO's text as it is, in both modes, as it does for redis-server
    for mode in ("--no-raw", "--raw"):
        out = cli(mode, "INFO", "server")
        assert out.startswith(b"# Server\r\nredis_version:7.0.0\r\n"), out
        assert b"\r\nredis_mode:standalone\r\n" in out
    port = str(server.port).encode()
    assert cli("CONFIG", "GET", "port") == b"port\n" + port + b"\n"
    assert cli("--no-raw", "CONFIG", "GET", "port") == b'1) "port"\n2) "' + port + b'"\n'


# --- in process: the hooks subsystems plug into ------------------------------------------------


@pytest.fixture
def local() -> tuple[Core, Context]:
    load_all()
    core = Core(clock=ManualClock(1_700_000_000_123))
    return core, Context(core)


def call(ctx: Context, *args: str | bytes) -> Any:
    return dispatch(ctx, [a.encode() if isinstance(a, str) else a for a in args])


def test_time_reads_the_servers_clock(local: tuple[Core, Context]) -> None:
    _core, ctx = local
    assert call(ctx, "TIME") == [b"1700000000", b"123000"]


def test_registered_info_sections_merge_and_add(local: tuple[Core, Context]) -> None:
    core, ctx = local
    class Sections(Subsystem):
        def info_sections(self) -> dict[str, Any]:
            return {"persistence": lambda: [("aof_enabled", 1), ("aof_base_size", 4096)],
                    "tls": lambda: [("tls_enabled", True)]}

    core.attach(Sections())
    text = call(ctx, "INFO", "persistence", "tls").text
    persistence = fields(text.split(b"\r\n\r\n")[0])
    keys = list(persistence)
    assert persistence["aof_enabled"] == "1"
    assert keys.index("aof_enabled") < keys.index("aof_last_write_status") < keys.index("aof_base_size")
    assert headers(text) == ["Persistence", "Tls"]
    assert text.endswith(b"# Tls\r\ntls_enabled:1\r\n")
    assert "Tls" in headers(call(ctx, "INFO").text)


class RecordingPersistence:
    """The interface persistence attaches as core.persistence."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.lastsave = 1_234_567_890

    def save(self) -> None:
        self.calls.append("save")

    def bgsave(self, wait: bool = True) -> str:
        self.calls.append("bgsave")
        return "Background saving started"

    def bgrewrite(self, wait: bool = True) -> None:
        self.calls.append("bgrewrite")


def test_save_commands_call_the_persistence_hooks(local: tuple[Core, Context]) -> None:
    core, ctx = local
    for cmd in ("SAVE", "BGSAVE", "BGREWRITEAOF"):
        reply = call(ctx, cmd)
        assert isinstance(reply, ErrorReply) and reply == NO_PERSISTENCE
    assert call(ctx, "LASTSAVE") == int(core.started_s)
    hooks = RecordingPersistence()
    core.persistence = hooks  # type: ignore[assignment]
    assert call(ctx, "SAVE") == "OK"
    assert call(ctx, "BGSAVE", "SCHEDULE") == "Background saving started"
    assert call(ctx, "BGREWRITEAOF") == "Background append only file rewriting started"
    assert hooks.calls == ["save", "bgsave", "bgrewrite"]
    assert call(ctx, "LASTSAVE") == 1_234_567_890
    assert fields(call(ctx, "INFO", "persistence").text)["rdb_last_save_time"] == "1234567890"


def test_config_listener_can_veto_and_everything_is_undone(local: tuple[Core, Context]) -> None:
    core, ctx = local
    seen: list[tuple[str, Any]] = []

    class Listener(Subsystem):
        def config_changed(self, name: str, value: Any) -> None:
            seen.append((name, value))
            if name == "appendfsync" and value == "no":
                raise ConfigError("the AOF writer refuses 'no' here")

    core.attach(Listener())
    assert call(ctx, "CONFIG", "SET", "timeout", "5", "appendfsync", "always") == "OK"
    assert seen == [("timeout", 5), ("appendfsync", "always")]
    reply = call(ctx, "CONFIG", "SET", "timeout", "9", "appendfsync", "no")
    assert reply == (
        "ERR CONFIG SET failed (possibly related to argument 'appendfsync') - "
        "the AOF writer refuses 'no' here"
    )
    assert core.config.values["timeout"] == 5
    assert core.config.values["appendfsync"] == "always"


def test_config_rewrite_writes_a_file_the_server_can_read(tmp_path: Path) -> None:
    load_all()
    path = tmp_path / "hotkv.conf"
    path.write_text("port 7777\nmaxclients 50\n")
    core = Core(config=load_config([str(path)]))
    ctx = Context(core)
    assert call(ctx, "CONFIG", "SET", "maxclients", "60", "maxmemory-policy", "allkeys-lru") == "OK"
    assert call(ctx, "CONFIG", "REWRITE") == "OK"
    again = load_config([str(path)])
    assert again.values["port"] == 7777
    assert again.values["maxclients"] == 60
    assert again.values["maxmemory-policy"] == "allkeys-lru"
    assert [p.name for p in tmp_path.iterdir()] == ["hotkv.conf"]  # no temp file left


def test_shutdown_hands_the_save_choice_to_the_server(local: tuple[Core, Context]) -> None:
    core, ctx = local
    requested: list[bool | None] = []
    core.shutdown_requested = requested.append
    from hotkv_server.engine.dispatch import NO_REPLY

    assert call(ctx, "SHUTDOWN", "SAVE", "NOW", "FORCE") is NO_REPLY
    assert ctx.close_after_reply
    ctx2 = Context(core)
    call(ctx2, "SHUTDOWN")
    call(Context(core), "shutdown", "nosave")
    assert requested == [True, None, False]


def test_info_text_is_verbatim(local: tuple[Core, Context]) -> None:
    _core, ctx = local
    reply = call(ctx, "INFO", "cluster")
    assert isinstance(reply, Verbatim)
    assert reply.text == b"# Cluster\r\ncluster_enabled:0\r\n"


def test_info_fields_come_in_redis_order(server: HotkvProcess, reference: RedisServer) -> None:
    """The fields both servers print, section by section, in the same relative order as a
    real redis-server 7 (the replication counters sit inside INFO stats, as there)."""
    ours = raw_roundtrip(server.port, b"INFO everything\r\n")
    theirs = raw_roundtrip(reference.port, b"INFO everything\r\n")

    def sections(text: bytes) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        current = ""
        for line in text.decode().splitlines():
            if line.startswith("# "):
                current = line[2:].lower()
                out[current] = []
            elif ":" in line:
                out[current].append(line.split(":", 1)[0])
        return out

    mine, ref = sections(ours), sections(theirs)
    for name in ("server", "clients", "memory", "persistence", "stats", "replication"):
        common = set(mine[name]) & set(ref[name])
        assert len(common) >= 3, name
        assert [f for f in mine[name] if f in common] == [f for f in ref[name] if f in common], name
    assert {"sync_full", "total_net_repl_output_bytes"} <= set(mine["stats"])
