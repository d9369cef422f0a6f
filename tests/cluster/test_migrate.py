"""DUMP, RESTORE and MIGRATE move every object stored under one name (a string, a
conversation, a scratchpad, a namespace of facts, an agent's log and summary) between hotkv
servers, with absolute expiry kept; errors as redis-server 7 words them."""

from __future__ import annotations

import pytest
import redis

from helpers import HotkvProcess, RedisServer


def fill(c: redis.Redis, name: str) -> None:
    c.set(name, "string value", px=600_000)
    c.execute_command("AMEM.CONV.CREATE", name, "WINDOW", "5", "TTL", "3600")
    c.execute_command("AMEM.CONV.APPEND", name, "user", "hello")
    c.execute_command("AMEM.WORK.SET", name, "ticket", "T-1", "TTL", "900")
    c.execute_command("AMEM.SEM.CREATE", name, "3")
    c.execute_command("AMEM.SEM.STORE", name, "f1", "a fact", "0.1", "0.2", "0.3")
    c.execute_command("AMEM.EPIS.LOG", name, "action", "did a thing")
    c.execute_command("AMEM.SUMMARY.SET", name, "so far so good")


def contents(c: redis.Redis, name: str) -> dict[str, object]:
    return {
        "string": c.get(name),
        "window": [t[b"content"] if isinstance(t, dict) else t
                   for t in c.execute_command("AMEM.CONV.WINDOW", name, "10")],
        "note": c.execute_command("AMEM.WORK.GET", name, "ticket"),
        "recall": c.execute_command("AMEM.SEM.RECALL", name, "1", "0.1", "0.2", "0.3"),
        "events": len(c.execute_command("AMEM.EPIS.QUERY", name)),
        "summary": c.execute_command("AMEM.SUMMARY.GET", name),
    }


def test_dump_and_restore_carry_every_store(server: HotkvProcess) -> None:
    c = server.client(protocol=3)
    c.flushall()
    fill(c, "agent-7")
    payload = c.dump("agent-7")
    assert payload and c.dump("nobody") is None
    before = contents(c, "agent-7")
    assert c.restore("agent-8", 0, payload) in (True, b"OK")
    after = contents(c, "agent-8")
    assert after == before
    # the string's deadline is absolute inside the payload: the copy keeps it
    assert 0 < c.pttl("agent-8") <= 600_000
    assert 800_000 < c.execute_command("AMEM.WORK.TTL", "agent-8", "ticket") <= 900_000
    with pytest.raises(redis.ResponseError, match=r"^BUSYKEY Target key name already exists\.$"):
        c.restore("agent-8", 0, payload)
    assert c.restore("agent-8", 0, payload, replace=True) in (True, b"OK")
    assert contents(c, "agent-8") == before


def test_restore_errors_match_redis(server: HotkvProcess) -> None:
    reference = RedisServer()
    try:
        ref = redis.Redis(port=reference.port)
        ours = server.client(protocol=2)
        for c in (ours, ref):
            c.flushall()
            c.set("a", "1")
        cases = [["RESTORE", "a", "-1", "xx"], ["RESTORE", "a", "0", "xx"], ["RESTORE", "b", "0", "xx"],
                 ["RESTORE", "b", "-5", "xx"], ["RESTORE", "b", "0", "xx", "foo"],
                 ["RESTORE", "b", "0", "xx", "IDLETIME", "-1"], ["RESTORE", "b", "0", "xx", "FREQ", "300"],
                 ["RESTORE", "b", "0", "xx", "IDLETIME"], ["RESTORE", "b", "x", "xx"],
                 ["MIGRATE", "127.0.0.1", "1", "a", "0", "100", "KEYS", "a"],
                 ["MIGRATE", "127.0.0.1", "1", "", "0", "100", "foo"]]
        for args in cases:
            with pytest.raises(redis.ResponseError) as theirs:
                ref.execute_command(*args)
            with pytest.raises(redis.ResponseError) as mine:
                ours.execute_command(*args)
            assert str(mine.value) == str(theirs.value), args
        assert ours.execute_command("MIGRATE", "127.0.0.1", "1", "nosuch", "0", "100") == \
            ref.execute_command("MIGRATE", "127.0.0.1", "1", "nosuch", "0", "100")
        assert ours.execute_command("DUMP", "nosuch") is None
        # a restore with an absolute deadline already passed creates nothing, as in Redis
        payload = ours.dump("a")
        assert ours.restore("gone", 1, payload, absttl=True) in (True, b"OK")
        assert ours.exists("gone") == 0
    finally:
        reference.stop()


def test_migrate_moves_and_restart_keeps_it() -> None:
    source = HotkvProcess("--appendonly", "yes").start()
    target = HotkvProcess("--appendonly", "yes").start()
    try:
        s, t = source.client(protocol=3), target.client(protocol=3)
        fill(s, "agent-9")
        before = contents(s, "agent-9")
        assert s.execute_command("MIGRATE", "127.0.0.1", target.port, "agent-9", 0, 5000) in (True, b"OK")
        assert s.exists("agent-9") == 0
        for kind in ("CONV", "SEM", "WORK", "EPIS", "SUMMARY"):
            assert s.execute_command("AMEM.SCAN", "0", "TYPE", kind)[1] == [], kind
        assert contents(t, "agent-9") == before
        fill(s, "a2")
        assert s.execute_command("MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "COPY", "KEYS", "a2") in (True, b"OK")
        assert contents(s, "a2") == contents(t, "a2")  # COPY leaves the source's objects
        with pytest.raises(redis.ResponseError, match="BUSYKEY"):
            s.execute_command("MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "KEYS", "a2")
        assert s.execute_command("MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "REPLACE", "KEYS", "a2") in (True, b"OK")
        target.restart()
        source.restart()
        t, s = target.client(protocol=3), source.client(protocol=3)
        assert contents(t, "agent-9") == before  # the obj.load effect was in the AOF
        assert s.exists("agent-9", "a2") == 0  # and the obj.drop in the source's
    finally:
        source.cleanup()
        target.cleanup()
