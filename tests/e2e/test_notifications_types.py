"""Keyspace notifications of the Redis data types, command by command against redis-server 7.

Each scenario is a list of commands sent to hotkv and to a real redis-server with
``notify-keyspace-events`` set; one subscriber per server (``PSUBSCRIBE __key*__:*``) hears
the events, and a marker published after each command (on a channel of its own) cuts the
stream into the events of each command, so a mismatch names the command that made it.
Hashes (``h``), lists (``l``), sets (``s``), sorted sets (``z``), the generic events of those
keys (``del``, ``expire``, ``rename_from``/``rename_to``, ``copy_to``) and the blocking pops
served by a later push; RESP2 and RESP3 subscribers.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import redis

from e2e.test_differential import RespConnection
from helpers import HotkvProcess, RedisServer, drain_to_mark

MARK = "notify-test-mark"

Command = tuple[Any, ...]

HASHES: list[Command] = [
    ("HSET", "h", "a", "1", "b", "2"),
    ("HSET", "h", "a", "1"),  # no new field: still "hset"
    ("HSETNX", "h", "a", "9"),  # not set: nothing
    ("HSETNX", "h", "c", "3"),
    ("HMSET", "h", "d", "4", "e", "5"),
    ("HINCRBY", "h", "n", "5"),
    ("HINCRBY", "h2", "n", "5"),  # creates the key
    ("HINCRBYFLOAT", "h", "f", "1.5"),
    ("HDEL", "h", "nope"),  # nothing removed: nothing
    ("HDEL", "h", "a", "b"),
    ("HDEL", "h2", "n"),  # the last field: hdel, then del
    ("HGET", "h", "c"),
    ("EXPIRE", "h", "100"),
    ("PERSIST", "h"),
    ("RENAME", "h", "h3"),
    ("COPY", "h3", "h4"),
    ("DEL", "h3", "h4", "missing"),
    ("HSET", "h5", "x", "1"),
    ("EXPIRE", "h5", "-1"),  # a past deadline deletes
    ("HSET", "h6", "x", "1"),
    ("UNLINK", "h6"),
]

LISTS: list[Command] = [
    ("LPUSH", "l", "a", "b", "c"),
    ("RPUSH", "l", "d", "e"),
    ("LPUSHX", "l", "x"),
    ("RPUSHX", "l", "y"),
    ("LPUSHX", "nol", "x"),  # no list: nothing
    ("LINSERT", "l", "BEFORE", "a", "z"),
    ("LINSERT", "l", "AFTER", "nope", "z"),  # no pivot: nothing
    ("LSET", "l", "0", "first"),
    ("LREM", "l", "0", "nope"),
    ("LREM", "l", "1", "z"),
    ("LTRIM", "l", "0", "-1"),  # keeps all: still "ltrim" in Redis
    ("LTRIM", "l", "1", "5"),
    ("LPOP", "l"),
    ("RPOP", "l", "2"),
    ("LPOP", "nol"),
    ("LMOVE", "l", "l2", "LEFT", "RIGHT"),  # l2 is created
    ("LMOVE", "l", "l2", "RIGHT", "LEFT"),
    ("LMOVE", "l2", "l2", "LEFT", "RIGHT"),  # rotation of one list
    ("RPOPLPUSH", "l2", "l3"),
    ("LMPOP", "2", "nol", "l2", "LEFT", "COUNT", "10"),  # empties l2: lpop, del
    ("LRANGE", "l", "0", "-1"),
    ("RPUSH", "t", "a", "b", "c"),
    ("LTRIM", "t", "5", "10"),  # trims everything: ltrim, del
    ("RPUSH", "r", "a", "a"),
    ("LREM", "r", "0", "a"),  # removes everything: lrem, del
    ("RPUSH", "m", "only"),
    ("LMOVE", "m", "m2", "LEFT", "LEFT"),  # empties the source
    ("RPUSH", "p", "a"),
    ("RPOP", "p"),
    ("BLPOP", "l3", "0.1"),  # has an element: served at once
    ("BRPOP", "nol", "l", "0.1"),
    ("SORT", "l", "ALPHA", "STORE", "sorted"),  # sortstore
    ("SORT", "l", "ALPHA", "STORE", "sorted"),  # replaced: sortstore again
    ("SORT", "l", "ALPHA"),  # no store: nothing
    ("SORT", "nol", "STORE", "sorted"),  # empty: the destination goes, del
    ("SORT", "nol", "STORE", "sorted"),  # nothing to delete: nothing
    ("EXPIRE", "l", "100"),
    ("RENAME", "l", "l4"),
    ("DEL", "l4"),
]

SETS: list[Command] = [
    ("SADD", "s", "a", "b", "c"),
    ("SADD", "s", "a"),  # nothing new: nothing
    ("SREM", "s", "nope"),
    ("SREM", "s", "a"),
    ("SMOVE", "s", "s2", "b"),  # creates s2
    ("SMOVE", "s", "s2", "nope"),
    ("SADD", "s2", "c"),
    ("SMOVE", "s", "s2", "c"),  # empties s, c already in s2
    ("SADD", "s3", "1", "2", "3", "4"),
    ("SPOP", "s3"),
    ("SPOP", "s3", "0"),
    ("SPOP", "s3", "1"),
    ("SPOP", "s3", "10"),  # takes the rest: spop, del
    ("SADD", "x", "1", "2", "3"),
    ("SADD", "y", "2", "3", "4"),
    ("SINTERSTORE", "d", "x", "y"),
    ("SUNIONSTORE", "d", "x", "y"),
    ("SDIFFSTORE", "d", "x", "y"),
    ("SINTERSTORE", "d", "x", "nothing"),  # empty result deletes d: del
    ("SINTERSTORE", "d", "x", "nothing"),  # d absent: nothing
    ("SDIFFSTORE", "x", "x", "y"),  # stores over a source
    ("SREM", "y", "2", "3", "4"),  # srem, del
    ("SMEMBERS", "x"),
    ("EXPIRE", "x", "100"),
    ("RENAME", "x", "x2"),
    ("COPY", "x2", "x3"),
    ("DEL", "x2", "x3"),
]

ZSETS: list[Command] = [
    ("ZADD", "z", "1", "a", "2", "b", "3", "c"),
    ("ZADD", "z", "1", "a"),  # no change: nothing
    ("ZADD", "z", "5", "a"),  # score changed: zadd
    ("ZADD", "z", "NX", "9", "a"),  # refused: nothing
    ("ZADD", "z", "XX", "CH", "7", "a"),
    ("ZADD", "z", "INCR", "1", "a"),
    # a member called INCR (options come before the first score): "zadd", not "zincr"
    ("ZADD", "z", "+inf", "INCR", "-1", "10"),
    ("ZADD", "z", "NX", "5", "INCR"),
    ("ZADD", "znew", "1", "INCR"),  # creates znew
    ("ZINCRBY", "z", "2", "b"),
    ("ZINCRBY", "z2", "2", "b"),  # creates z2
    ("ZADD", "z", "GT", "0", "c"),  # refused by GT
    ("ZREM", "z", "nope"),
    ("ZREM", "z", "a"),
    ("ZADD", "z", "4", "d", "5", "e", "6", "f", "7", "g"),
    ("ZREMRANGEBYSCORE", "z", "100", "200"),  # nothing in range: nothing
    ("ZREMRANGEBYSCORE", "z", "4", "5"),
    ("ZREMRANGEBYRANK", "z", "0", "0"),
    ("ZADD", "lex", "0", "a", "0", "b", "0", "c"),
    ("ZREMRANGEBYLEX", "lex", "[a", "[b"),
    ("ZREMRANGEBYLEX", "lex", "-", "+"),  # the rest: zremrangebylex, del
    ("ZPOPMIN", "z"),
    ("ZPOPMAX", "z", "2"),
    ("ZPOPMIN", "nothing"),
    ("ZADD", "u", "1", "a", "2", "b"),
    ("ZADD", "v", "2", "b", "3", "c"),
    ("ZUNIONSTORE", "dst", "2", "u", "v"),
    ("ZINTERSTORE", "dst", "2", "u", "v"),
    ("ZDIFFSTORE", "dst", "2", "u", "v"),
    ("ZRANGESTORE", "dst2", "u", "0", "-1"),
    ("ZINTERSTORE", "dst", "2", "u", "nothing"),  # empty: del
    ("ZRANGESTORE", "dst2", "u", "5", "10"),  # empty: del
    ("ZMPOP", "2", "nothing", "u", "MIN", "COUNT", "5"),  # empties u: zpopmin, del
    ("BZPOPMAX", "v", "0.1"),
    ("BZMPOP", "0.1", "1", "v", "MAX"),  # the last member: zpopmax, del
    ("ZADD", "w", "1", "a"),
    ("ZREM", "w", "a"),  # zrem, del
    ("ZADD", "k", "1", "a"),
    ("EXPIRE", "k", "100"),
    ("RENAME", "k", "k2"),
    ("RENAME", "k2", "z"),  # over an existing key
    ("COPY", "z", "k3"),
    ("COPY", "z", "k3", "REPLACE"),
    ("DEL", "z", "k3", "z2", "dst2"),
]

#: a key of one type overwritten by another
MIXED: list[Command] = [
    ("SET", "k", "v"),
    ("HSET", "h", "f", "v"),
    ("SET", "h", "string now"),
    ("RPUSH", "l", "a"),
    ("RENAME", "l", "k"),  # over a string
    ("SADD", "s", "a"),
    ("SINTERSTORE", "k", "s"),  # over a list
    ("DEL", "k", "s", "h"),
    ("ZADD", "e", "1", "m"),
    ("PEXPIRE", "e", "40"),
    ("SLEEP", 0.3),  # expires, lazily or actively: its events count with the next command's
    ("ZCARD", "e"),
]

SCENARIOS = {"hashes": HASHES, "lists": LISTS, "sets": SETS, "zsets": ZSETS, "mixed": MIXED}


def _split(stream: list[tuple[bytes, bytes]]) -> list[list[tuple[bytes, bytes]]]:
    """The events before each marker, in order (the last list: after the last marker)."""
    per_command: list[list[tuple[bytes, bytes]]] = [[]]
    for channel, data in stream:
        if channel == MARK.encode():
            per_command.append([])
        else:
            per_command[-1].append((channel, data))
    return per_command


def events_per_command(port: int, protocol: int, flags: str,
                       commands: list[Command]) -> list[tuple[Command, list[Any]]]:
    client = redis.Redis(port=port, protocol=protocol)
    client.flushall()
    client.config_set("notify-keyspace-events", flags)
    listener = client.pubsub()
    listener.psubscribe("__key*__:*")
    listener.subscribe(MARK)
    conn = RespConnection(port, protocol)  # raw: any reply, an error included, is taken
    for _ in range(2):
        assert listener.get_message(timeout=2) is not None
    try:
        for command in commands:
            if command[0] == "SLEEP":
                time.sleep(command[1])
                continue
            conn.call(list(command))
            conn.call(["PUBLISH", MARK, "next"])
        stream = drain_to_mark(listener)
    finally:
        conn.close()
        listener.close()
        client.config_set("notify-keyspace-events", "")
        client.close()
    per_command = _split(stream)
    commands = [command for command in commands if command[0] != "SLEEP"]
    assert len(per_command) == len(commands) + 1, "a marker went missing"
    assert per_command[-1] == [], per_command[-1]
    return list(zip(commands, per_command[:-1], strict=True))


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_type_events_as_redis(server: HotkvProcess, reference: RedisServer, scenario: str,
                              protocol: int) -> None:
    commands = SCENARIOS[scenario]
    hot = events_per_command(server.port, protocol, "KEA", commands)
    ref = events_per_command(reference.port, protocol, "KEA", commands)
    for (command, got), (_, expected) in zip(hot, ref, strict=True):
        assert got == expected, command
    assert any(events for _, events in ref), "the scenario made no event at all"
    if scenario == "mixed":
        assert (b"__keyevent@0__:expired", b"e") in hot[-1][1]


@pytest.mark.parametrize("flags", ["Kh", "El", "Ks", "Ez", "Kg", "KEAn", "Eglshz"])
def test_type_event_classes_as_redis(server: HotkvProcess, reference: RedisServer,
                                     flags: str) -> None:
    """Each class letter lets through exactly its own events (``n``: a new key)."""
    commands = [cmd for scenario in ("hashes", "lists", "sets", "zsets", "mixed")
                for cmd in SCENARIOS[scenario] if cmd[0] not in ("BLPOP", "BRPOP", "BZPOPMAX",
                                                                   "BZMPOP")]
    hot = events_per_command(server.port, 2, flags, commands)
    ref = events_per_command(reference.port, 2, flags, commands)
    for (command, got), (_, expected) in zip(hot, ref, strict=True):
        assert got == expected, command


def _served_blocking_events(port: int, protocol: int) -> list[tuple[bytes, bytes]]:
    """Clients blocked on empty keys, then served by pushes: the events in their order."""
    admin = redis.Redis(port=port, protocol=protocol)
    admin.flushall()
    admin.config_set("notify-keyspace-events", "KEA")
    listener = admin.pubsub()
    listener.psubscribe("__key*__:*")
    listener.get_message(timeout=2)
    blocked = [
        ("BLPOP", "q1", "5"),
        ("BLMOVE", "q2", "dst", "RIGHT", "LEFT", "5"),
        ("BRPOPLPUSH", "q3", "dst", "5"),
        ("BLMPOP", "5", "1", "q4", "RIGHT", "COUNT", "2"),
        ("BZPOPMIN", "zq", "5"),
        ("BZMPOP", "5", "1", "zq2", "MAX", "COUNT", "3"),
    ]
    threads = []
    clients = []
    for command in blocked:
        client = redis.Redis(port=port, protocol=protocol)
        clients.append(client)
        thread = threading.Thread(target=client.execute_command, args=command)
        thread.start()
        threads.append(thread)
        deadline = time.monotonic() + 5
        while admin.info("clients")["blocked_clients"] < len(threads):
            assert time.monotonic() < deadline
            time.sleep(0.01)
    admin.rpush("q1", "a", "b")
    admin.rpush("q2", "a")  # served into a new "dst"
    admin.rpush("q3", "a", "b")  # served into the existing "dst"
    admin.lpush("q4", "a", "b", "c")
    admin.zadd("zq", {"a": 1})
    admin.zadd("zq2", {"a": 1, "b": 2})
    for thread in threads:
        thread.join(timeout=5)
    events = drain_to_mark(listener)
    listener.close()
    admin.config_set("notify-keyspace-events", "")
    for client in clients:
        client.close()
    admin.close()
    return events


@pytest.mark.parametrize("protocol", [2, 3])
def test_served_blocking_pops_notify_as_redis(server: HotkvProcess, reference: RedisServer,
                                              protocol: int) -> None:
    hot = _served_blocking_events(server.port, protocol)
    ref = _served_blocking_events(reference.port, protocol)
    assert hot == ref
    assert (b"__keyspace@0__:dst", b"lpush") in ref


def test_script_writes_notify_as_their_commands(server: HotkvProcess,
                                                reference: RedisServer) -> None:
    script = ("redis.call('HSET', KEYS[1], 'f', 'v'); redis.call('HINCRBY', KEYS[1], 'n', 1);"
              "redis.call('RPUSH', KEYS[2], 'a'); redis.call('LPOP', KEYS[2]);"
              "redis.call('ZADD', KEYS[3], 1, 'm'); redis.call('SADD', KEYS[4], 'm')")
    commands: list[Command] = [("EVAL", script, "4", "h", "l", "z", "s"),
                               ("MULTI",), ("HDEL", "h", "f", "n"), ("SREM", "s", "m"), ("EXEC",)]
    hot = events_per_command(server.port, 3, "KEA", commands)
    ref = events_per_command(reference.port, 3, "KEA", commands)
    assert hot == ref


def test_type_events_reach_only_the_tenant_of_the_key(server: HotkvProcess) -> None:
    """A user confined to ``~tenant-a:*`` subscribed to every notification hears the type
    events of its own keys and nothing of tenant b's, renames and moves across included."""
    admin = server.client()
    admin.config_set("notify-keyspace-events", "KEA")
    admin.execute_command("ACL", "SETUSER", "alice", "on", ">pw", "~tenant-a:*", "allchannels",
                          "+@all")
    try:
        alice = server.client(username="alice", password="pw")
        listener = alice.pubsub()
        listener.psubscribe("__key*@0__:*")
        listener.get_message(timeout=2)
        for tenant in ("tenant-b", "tenant-a"):
            admin.hset(f"{tenant}:h", "f", "v")
            admin.rpush(f"{tenant}:l", "a", "b")
            admin.sadd(f"{tenant}:s", "m")
            admin.zadd(f"{tenant}:z", {"m": 1})
            admin.lpop(f"{tenant}:l")
            admin.zpopmin(f"{tenant}:z")
        admin.lmove("tenant-b:l", "tenant-a:l", "LEFT", "RIGHT")  # the other tenant's pop
        admin.smove("tenant-b:s", "tenant-a:s2", "m")
        admin.rename("tenant-b:h", "tenant-a:h2")
        events = drain_to_mark(listener)
        assert all(b"tenant-b" not in channel + data for channel, data in events), events
        for expected in [(b"__keyspace@0__:tenant-a:h", b"hset"),
                         (b"__keyevent@0__:rpush", b"tenant-a:l"),
                         (b"__keyspace@0__:tenant-a:z", b"zpopmin"),
                         (b"__keyspace@0__:tenant-a:z", b"del"),
                         (b"__keyspace@0__:tenant-a:l", b"rpush"),
                         (b"__keyspace@0__:tenant-a:s2", b"sadd"),
                         (b"__keyspace@0__:tenant-a:h2", b"rename_to")]:
            assert expected in events
        listener.close()
        alice.close()
    finally:
        admin.execute_command("ACL", "DELUSER", "alice")
        admin.config_set("notify-keyspace-events", "")
        admin.close()


def test_restore_notifies_restore(server: HotkvProcess, reference: RedisServer) -> None:
    """RESTORE publishes ``restore`` (generic) on its key, REPLACE included, as Redis does
    (each server restores its own DUMP payload: the formats are not compared here)."""
    seen = []
    for port in (server.port, reference.port):
        client = redis.Redis(port=port)
        client.flushall()
        client.hset("src", "f", "v")
        payload = client.dump("src")
        commands: list[Command] = [("RESTORE", "copy", "0", payload),
                                   ("RESTORE", "copy", "0", payload, "REPLACE")]
        seen.append([events for _, events in events_per_command(port, 2, "KEA", commands)])
        client.close()
    assert seen[0] == seen[1]
    assert seen[0][0] == [(b"__keyspace@0__:copy", b"restore"),
                             (b"__keyevent@0__:restore", b"copy")]
