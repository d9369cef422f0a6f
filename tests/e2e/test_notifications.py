"""Keyspace notifications against redis-server 7, and agent-memory notifications.

The string keyspace's events (``__keyspace@0__:`` / ``__keyevent@0__:``) are compared with a
real redis-server for the same commands and flags, expiry and eviction included. Memory
events (``__amem@0__:<store>:<id>``, flag ``a``) are checked for an agent watching its
session, and a user confined by ACL key patterns is shown to hear nothing of another
tenant's keys or ids, whatever its channel permissions.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from helpers import HotkvProcess, RedisServer, drain_to_mark


def drain(listener: Any, wait: float = 0.4) -> list[tuple[bytes, bytes]]:
    out: list[tuple[bytes, bytes]] = []
    while True:
        message = listener.get_message(timeout=wait)
        if message is None:
            return out
        if message["type"] in ("message", "pmessage"):
            out.append((message["channel"], message["data"]))


def events_of(port: int, protocol: int, flags: str, actions: Any) -> list[tuple[bytes, bytes]]:
    client = redis.Redis(port=port, protocol=protocol)
    client.flushall()
    client.config_set("notify-keyspace-events", flags)
    listener = client.pubsub()
    listener.psubscribe("__key*__:*")
    assert listener.get_message(timeout=2)["type"] == "psubscribe"
    actions(client)
    events = drain_to_mark(listener)
    listener.close()
    client.config_set("notify-keyspace-events", "")
    client.close()
    return events


def string_commands(client: redis.Redis) -> None:
    client.set("a", "1")
    client.set("a", "2", ex=100)
    client.set("a", "3", keepttl=True)
    client.incr("a")
    client.incrby("a", 5)
    client.decr("a")
    client.decrby("a", 2)
    client.mset({"b": "x", "c": "y"})
    client.expire("b", 100)
    client.pexpire("b", 200000)
    client.persist("b")
    client.expire("c", -1)  # a deadline in the past deletes: "del"
    client.delete("a", "b", "missing")
    client.set("n", "v", nx=True)
    client.set("n", "w", nx=True)  # no change, no event
    client.set("short", "v", px=10)
    time.sleep(0.05)
    client.get("short")
    client.get("never-there")
    client.mget("n", "absent")
    client.set("absent-too", "v", get=True)


@pytest.mark.parametrize("flags", ["KEA", "K$", "Eg", "KEx", "KEAn", "Kgn", "E$x", "KEm", "Em$"])
@pytest.mark.parametrize("protocol", [2, 3])
def test_string_keyspace_events_as_redis(server: HotkvProcess, reference: RedisServer,
                                         flags: str, protocol: int) -> None:
    hot = events_of(server.port, protocol, flags, string_commands)
    ref = events_of(reference.port, protocol, flags, string_commands)
    assert hot == ref
    if "K" in flags and ("A" in flags or "$" in flags):
        assert (b"__keyspace@0__:a", b"incrby") in hot


def test_notify_keyspace_events_flags_read_back_as_redis(server: HotkvProcess,
                                                          reference: RedisServer) -> None:
    for flags in ["KEA", "Kgx", "KEAmn", "g$", "Kgxd$lshzten", "Kmn", "En", "A", "Ad", "AKEn",
                  "g$lshzxet", "g$lshzxetd", ""]:
        got = []
        for port in (server.port, reference.port):
            client = redis.Redis(port=port, decode_responses=True)
            client.config_set("notify-keyspace-events", flags)
            got.append(client.config_get("notify-keyspace-events"))
            client.close()
        assert got[0] == got[1], flags
    for port in (server.port, reference.port):
        client = redis.Redis(port=port)
        with pytest.raises(redis.ResponseError, match="Invalid event class character"):
            client.config_set("notify-keyspace-events", "Kq")
        client.config_set("notify-keyspace-events", "")
        client.close()


def test_evicted_keys_notify_as_redis(reference: RedisServer) -> None:
    proc = HotkvProcess("--maxmemory-policy", "allkeys-random").start()
    try:
        seen = []
        for port in (proc.port, reference.port):
            client = redis.Redis(port=port)
            client.flushall()
            client.config_set("maxmemory-policy", "allkeys-random")
            for n in range(200):
                client.set(f"k{n}", "v" * 1000)
            client.config_set("notify-keyspace-events", "Ee")
            listener = client.pubsub()
            listener.subscribe("__keyevent@0__:evicted")
            listener.get_message(timeout=2)
            used = client.info("memory")["used_memory"]
            client.config_set("maxmemory", max(1, used - 50_000))
            client.set("trigger", "x")
            events = drain(listener)
            client.config_set("maxmemory", 0)
            client.config_set("notify-keyspace-events", "")
            client.config_set("maxmemory-policy", "noeviction")
            listener.close()
            client.close()
            seen.append(events)
        for events in seen:
            assert events, "no eviction notified"
            assert all(channel == b"__keyevent@0__:evicted" for channel, _ in events)
            # keys of the data set; "trigger" too when eviction went on after its SET (the
            # cron's eviction, as Redis's time-limited eviction, while RSS is still over)
            assert all(key.startswith(b"k") or key == b"trigger" for _, key in events), events
    finally:
        proc.cleanup()


# --- agent memory ----------------------------------------------------------------------


@pytest.fixture
def amem(server: HotkvProcess) -> Iterator[redis.Redis]:
    client = server.client(protocol=3)
    client.flushall()
    client.config_set("notify-keyspace-events", "a")
    try:
        yield client
    finally:
        client.config_set("notify-keyspace-events", "")
        client.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_agent_sees_its_turns_note_expiry_and_summary_updates_in_order(
        server: HotkvProcess, amem: redis.Redis, protocol: int) -> None:
    watcher = server.client(protocol=protocol)
    listener = watcher.pubsub()
    listener.psubscribe("__amem@0__:*:session-42")
    assert listener.get_message(timeout=2)["type"] == "psubscribe"
    other = watcher.pubsub()  # a dashboard watching every conversation
    other.psubscribe("__amem@0__:conv:*")
    other.get_message(timeout=2)

    amem.execute_command("AMEM.CONV.CREATE", "session-42", "WINDOW", "10")
    amem.execute_command("AMEM.CONV.APPEND", "session-42", "user", "My VAT number is wrong")
    amem.execute_command("AMEM.WORK.SET", "session-42", "ticket", "INV-1932", "PX", "150")
    amem.execute_command("AMEM.CONV.APPEND", "session-42", "assistant", "Let me check")
    amem.execute_command("AMEM.CONV.CREATE", "session-7")
    amem.execute_command("AMEM.CONV.APPEND", "session-7", "user", "unrelated")
    amem.execute_command("AMEM.SUMMARY.SET", "session-42", "VAT issue on INV-1932")
    time.sleep(0.5)  # the note expires (active expiry runs hz times a second)
    amem.execute_command("AMEM.SUMMARY.APPEND", "session-42", "resolved")

    events = drain(listener, wait=0.5)
    assert events == [
        (b"__amem@0__:conv:session-42", b"create"),
        (b"__amem@0__:conv:session-42", b"append 1"),
        (b"__amem@0__:work:session-42", b"set ticket"),
        (b"__amem@0__:conv:session-42", b"append 2"),
        (b"__amem@0__:summary:session-42", b"set 1"),
        (b"__amem@0__:work:session-42", b"expired ticket"),
        (b"__amem@0__:summary:session-42", b"append 2"),
    ]
    dashboard = drain_to_mark(other)
    assert (b"__amem@0__:conv:session-7", b"append 1") in dashboard
    assert all(channel.startswith(b"__amem@0__:conv:") for channel, _ in dashboard)
    listener.close()
    other.close()
    watcher.close()


def _vector(x: float) -> bytes:
    return struct.pack("<4f", x, 1.0, 0.0, 0.0)


def test_fact_stored_forgotten_evicted_expired_and_events_logged(server: HotkvProcess,
                                                                 amem: redis.Redis) -> None:
    listener = amem.pubsub()
    listener.psubscribe("__amem@0__:*")
    listener.get_message(timeout=2)
    amem.execute_command("AMEM.SEM.CREATE", "kb", "4", "CAPACITY", "2", "EVICT", "OLDEST")
    amem.execute_command("AMEM.SEM.STORE", "kb", "f1", "one", "FP32", _vector(0.1))
    amem.execute_command("AMEM.SEM.STORE", "kb", "f2", "two", "FP32", _vector(0.2), "PX", "100")
    amem.execute_command("AMEM.SEM.STORE", "kb", "f3", "three", "FP32", _vector(0.3))  # evicts f1
    amem.execute_command("AMEM.SEM.DEL", "kb", "f3")
    event_id = amem.execute_command("AMEM.EPIS.LOG", "agent-1", "action", "looked it up", "WITHID")
    time.sleep(0.4)
    events = drain(listener)
    assert events == [
        (b"__amem@0__:sem:kb", b"create"),
        (b"__amem@0__:sem:kb", b"store f1"),
        (b"__amem@0__:sem:kb", b"store f2"),
        (b"__amem@0__:sem:kb", b"evicted f1"),
        (b"__amem@0__:sem:kb", b"store f3"),
        (b"__amem@0__:sem:kb", b"forget f3"),
        (b"__amem@0__:epis:agent-1", b"log " + (event_id if isinstance(event_id, bytes)
                                                else str(event_id).encode())),
        (b"__amem@0__:sem:kb", b"expired f2"),
    ]
    listener.close()


def test_memory_events_need_their_own_flag(server: HotkvProcess) -> None:
    client = server.client()
    client.config_set("notify-keyspace-events", "KEA")
    listener = client.pubsub()
    listener.psubscribe("__amem@0__:*")
    listener.get_message(timeout=2)
    client.execute_command("AMEM.CONV.CREATE", "quiet")
    client.execute_command("AMEM.CONV.APPEND", "quiet", "user", "hello")
    assert drain_to_mark(listener) == []
    client.config_set("notify-keyspace-events", "")
    listener.close()
    client.close()


def test_replica_notifies_the_writes_it_applies(server: HotkvProcess) -> None:
    replica = HotkvProcess("--replicaof", "127.0.0.1", str(server.port),
                           "--notify-keyspace-events", "KEAa").start()
    try:
        client = replica.client()
        deadline = time.monotonic() + 10
        while client.info("replication").get("master_link_status") != "up":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        listener = client.pubsub()
        listener.psubscribe("__*@0__:*")
        listener.get_message(timeout=2)
        primary = server.client()
        primary.set("from-primary", "v")
        primary.execute_command("AMEM.CONV.CREATE", "replicated")
        primary.execute_command("AMEM.CONV.APPEND", "replicated", "user", "hi")
        primary.hset("replicated-hash", "f", "v")
        primary.rpush("replicated-list", "a", "b")
        primary.lpop("replicated-list", 2)
        events = drain(listener, wait=0.5)
        assert (b"__keyspace@0__:from-primary", b"set") in events
        assert (b"__keyspace@0__:replicated-hash", b"hset") in events
        assert events.index((b"__keyspace@0__:replicated-list", b"lpop")) < events.index(
            (b"__keyspace@0__:replicated-list", b"del"))
        assert (b"__amem@0__:conv:replicated", b"append 1") in events
        primary.close()
        listener.close()
        client.close()
    finally:
        replica.cleanup()


# --- tenants ---------------------------------------------------------------------------


def test_key_confined_user_hears_nothing_of_other_tenants(server: HotkvProcess) -> None:
    """A user with ``~tenant-a:*`` and every channel: PSUBSCRIBE to all notifications gets
    only tenant a's keys and ids; PUBSUB CHANNELS hides tenant b's keyspace channels."""
    admin = server.client()
    admin.config_set("notify-keyspace-events", "KEAa")
    admin.execute_command("ACL", "SETUSER", "alice", "on", ">pw", "~tenant-a:*", "allchannels",
                          "+@all")
    try:
        alice = server.client(username="alice", password="pw")
        listener = alice.pubsub()
        listener.psubscribe("__key*@0__:*", "__amem@0__:*")
        for _ in range(2):
            listener.get_message(timeout=2)
        watcher_b = admin.pubsub()  # a default-user subscriber of tenant b's key channel
        watcher_b.subscribe("__keyspace@0__:tenant-b:secret")
        watcher_b.get_message(timeout=2)

        admin.set("tenant-b:secret", "v")
        admin.set("tenant-a:mine", "v")
        for tenant in ("tenant-b", "tenant-a"):
            admin.execute_command("AMEM.CONV.CREATE", f"{tenant}:chat")
            admin.execute_command("AMEM.CONV.APPEND", f"{tenant}:chat", "user", "words")
        admin.set("tenant-b:short", "v", px=50)
        time.sleep(0.3)
        events = drain(listener)
        assert events, "alice got none of her own events"
        assert all(b"tenant-b" not in channel + data for channel, data in events), events
        assert (b"__keyspace@0__:tenant-a:mine", b"set") in events
        assert (b"__keyevent@0__:set", b"tenant-a:mine") in events
        assert (b"__amem@0__:conv:tenant-a:chat", b"append 1") in events
        channels = alice.pubsub_channels()
        assert b"__keyspace@0__:tenant-b:secret" not in channels
        assert alice.pubsub_numsub("__keyspace@0__:tenant-b:secret") == [
            (b"__keyspace@0__:tenant-b:secret", 0)]
        assert b"__keyspace@0__:tenant-b:secret" in admin.pubsub_channels()
        # a direct SUBSCRIBE to the other tenant's channel is allowed by &*, yet silent
        spy = alice.pubsub()
        spy.subscribe("__keyspace@0__:tenant-b:secret")
        spy.get_message(timeout=2)
        admin.set("tenant-b:secret", "v2")
        assert drain_to_mark(spy) == []
        assert (b"__keyspace@0__:tenant-b:secret", b"set") in drain_to_mark(watcher_b)
        for sub in (listener, spy, watcher_b):
            sub.close()
        alice.close()
    finally:
        admin.execute_command("ACL", "DELUSER", "alice")
        admin.config_set("notify-keyspace-events", "")
        admin.close()
