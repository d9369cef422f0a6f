"""Test data for the persistence tests: a mixed workload over every store, and full dumps.

``populate`` writes through the commands (conversation, semantic, working, episodic,
summary memory and the keyspace's strings, hashes, sets, lists and sorted sets, with TTLs, overwrites,
deletes, random pops, a MULTI/EXEC).
``dump`` reads the whole state back through the commands, in RESP2 or RESP3, as plain
Python values; relative TTLs become absolute deadlines estimated with the server's TIME,
so two dumps taken at different moments compare with ``assert_same_state``.
"""

from __future__ import annotations

import json
import random
import time
from typing import Any

import numpy as np
import redis

from helpers import record, records

#: relative TTLs become absolute deadlines with this much uncertainty (ms)
DEADLINE_SLACK_MS = 500
DIM = 8
SEM_INFO_FIELDS = (b"dim", b"metric", b"count", b"capacity", b"evict", b"m", b"ef_construction", b"ef")


def fp32(values: Any) -> bytes:
    return np.asarray(values, dtype="<f4").tobytes()


def vector(rnd: random.Random) -> list[float]:
    return [rnd.uniform(-1.0, 1.0) for _ in range(DIM)]


def populate(r: redis.Redis, seed: int = 7, rounds: int = 60) -> None:
    """A deterministic mixed workload over every store (about 20 writes a round)."""
    rnd = random.Random(seed)
    ex = r.execute_command
    if ex("AMEM.SEM.INFO", "kb") is None:
        ex("AMEM.SEM.CREATE", "kb", DIM, "CAPACITY", 40, "EVICT", "OLDEST")
        ex("AMEM.SEM.CREATE", "kb-l2", DIM, "METRIC", "L2")
    for i in range(rounds):
        p = r.pipeline(transaction=False)
        p.set(f"key:{i}", f"value-{i}-{rnd.random()}")
        p.set(f"ttl:{i}", b"\x00binary\xff" + bytes([i % 256]), ex=3600)
        p.incrby("counter", rnd.randint(1, 9))
        if i % 7 == 3:
            p.delete(f"key:{i - 2}")
        if i % 5 == 0:
            p.execute_command("AMEM.CONV.CREATE", f"sess:{seed}:{i}", "WINDOW", 4, "TTL", 3600)
        p.execute_command("AMEM.CONV.APPEND", f"sess:{seed}:{i - i % 5}", rnd.choice(["user", "assistant"]),
                          f"turn {i}", "META", f'{{"i": {i}}}')
        p.execute_command("AMEM.WORK.SET", f"pad:{i % 6}", f"k{i % 9}", f"v{i}")
        p.execute_command("AMEM.WORK.SET", f"pad:{i % 6}", "total", str(i), "MERGE", "INCR")
        p.execute_command("AMEM.WORK.SET", f"pad:{i % 6}", "log", f'"e{i}"', "MERGE", "APPEND")
        p.execute_command("AMEM.WORK.SET", f"pad:{i % 6}", f"t{i % 4}", "x", "TTL", 3600)
        p.execute_command("AMEM.SEM.STORE", "kb", f"fact:{i % 50}", f"fact text {i}", "FP32",
                          fp32(vector(rnd)), "CONFIDENCE", round(rnd.random(), 3),
                          "KIND", rnd.choice(["fact", "preference"]), "META", f'{{"n": {i}}}',
                          *(["TTL", 3600] if i % 3 == 0 else []))
        if i % 4 == 0:
            p.execute_command("AMEM.SEM.STORE", "kb-l2", f"/notes/{i}.md", f"note {i}",
                              *[str(v) for v in vector(rnd)], "SOURCE", "test")
        p.execute_command("AMEM.EPIS.LOG", f"agent:{i % 3}", rnd.choice(["action", "observation"]),
                          f"event {i}", "META", '{"ok": true}', "SOURCE", "unit")
        p.execute_command("AMEM.SUMMARY.APPEND", f"agent:{i % 3}", f"line {i}")
        p.execute_command("AMEM.SUMMARY.SET", f"agent:x{i % 2}", f"summary {i}")
        _typed_writes(p, i)
        if i % 11 == 5:
            p.execute_command("AMEM.WORK.DEL", f"pad:{i % 6}", f"k{(i + 1) % 9}")
            p.execute_command("AMEM.SEM.DEL", "kb", f"fact:{(i * 7) % 50}")
            p.execute_command("AMEM.EPIS.TRIM", f"agent:{i % 3}", "MAXLEN", 5)
        p.execute()
        if i % 13 == 6:  # a transaction across the stores
            t = r.pipeline(transaction=True)
            t.set("tx:last", str(i))
            t.execute_command("AMEM.CONV.APPEND", f"sess:{seed}:{i - i % 5}", "tool", f"tx {i}")
            t.execute_command("AMEM.EPIS.LOG", "agent:tx", "decision", f"tx {i}")
            t.execute_command("AMEM.SUMMARY.APPEND", "agent:tx", f"tx {i}")
            t.hset("tx:hash", "i", str(i))
            t.sadd("tx:set", str(i))
            t.execute()
    ex("AMEM.WORK.EXPIRE", "pad:1", 3600)
    ex("AMEM.CONV.DEL", f"sess:{seed}:10")
    ex("AMEM.SEM.DROP", "nothing-here")
    # the HotKV dialect's writes: a cleared conversation that stays, fixed ends (PXAT),
    # one fact forgotten, a log emptied but kept, a summary dropped
    ex("AMEM.CONV.CLEAR", f"sess:{seed}:0")
    ex("AMEM.CONV.CREATE", f"sess:{seed}:pxat", "WINDOW", 3, "PXAT", _server_ms(r) + 3_600_000)
    ex("AMEM.CONV.APPEND", f"sess:{seed}:pxat", "user", "until a fixed end")
    ex("AMEM.WORK.SET", "pad:0", "until", "x", "PXAT", _server_ms(r) + 3_600_000)
    ex("AMEM.SEM.STORE", "kb", "fact:pxat", "until", "FP32", fp32(vector(rnd)), "PXAT",
       _server_ms(r) + 3_600_000)
    ex("AMEM.SEM.FORGET", "kb", "fact:1")
    ex("AMEM.EPIS.LOG", "agent:cleared", "action", "soon cleared", "METADATA", "free text")
    ex("AMEM.EPIS.CLEAR", "agent:cleared")
    ex("AMEM.SUMMARY.DROP", "agent:x0")


def _typed_writes(p: Any, i: int) -> None:
    """Hash and set writes of round ``i``: SPOP's random pick must replay exactly too."""
    p.hset(f"hash:{i % 8}", mapping={f"f{i % 5}": f"v{i}", "n": str(i)})
    p.hincrby(f"hash:{i % 8}", "count", 1)
    p.hincrbyfloat(f"hash:{i % 8}", "avg", 0.1)
    p.hsetnx(f"hash:{i % 8}", "first", str(i))
    p.sadd(f"set:{i % 6}", f"m{i}", f"m{i % 4}", str(i % 10))
    if i % 5 == 2:
        p.spop(f"set:{(i + 1) % 6}")
        p.spop(f"set:{(i + 2) % 6}", 2)
        p.hdel(f"hash:{(i + 3) % 8}", f"f{i % 5}", "n")
        p.srem(f"set:{(i + 4) % 6}", f"m{i % 4}")
    if i % 9 == 4:
        p.smove(f"set:{i % 6}", f"set:{(i + 2) % 6}", f"m{i}")
        p.smove(f"set:{i % 6}", f"moved:{i}", f"m{i % 4}")
        p.sinterstore(f"inter:{i % 3}", f"set:{i % 6}", f"set:{(i + 1) % 6}")
        p.sunionstore(f"union:{i % 3}", f"set:{i % 6}", f"set:{(i + 3) % 6}")
        p.expire(f"hash:{i % 8}", 3600)
        p.pexpire(f"set:{(i + 5) % 6}", 7_200_000)
    _list_zset_writes(p, i)
    _vector_set_writes(p, i)
    if i % 17 == 8:
        p.copy(f"hash:{i % 8}", f"hash-copy:{i}", replace=True)
        p.rename(f"set:{i % 6}", f"renamed:{i}")
        p.append(f"key:{i}", "-appended")
        p.setrange(f"key:{i}", 2, "XY")
        p.incrbyfloat("float", 1.25)
        p.getex(f"key:{i}", ex=1800)


def _vector_set_writes(p: Any, i: int) -> None:
    """Vector set writes of round ``i``: adds (Q8 and BIN sets), attributes, removals."""
    vec = [float((i * 7 + j * 3) % 11) - 5.0 for j in range(6)]
    p.execute_command("VADD", f"vset:{i % 3}", "VALUES", 6, *vec, f"v{i % 40}",
                      "SETATTR", json.dumps({"i": i}))
    p.execute_command("VADD", "vset:bin", "VALUES", 6, *vec, f"b{i % 25}", "BIN")
    if i % 4 == 1:
        p.execute_command("VREM", f"vset:{(i + 1) % 3}", f"v{(i * 3) % 40}")
        p.execute_command("VSETATTR", f"vset:{(i + 2) % 3}", f"v{i % 40}", "")


def _list_zset_writes(p: Any, i: int) -> None:
    """List and sorted set writes of round ``i``: pushes, pops, edits, moves, scores, ranges."""
    p.rpush(f"list:{i % 5}", f"e{i}", f"e{i % 3}")
    p.lpush(f"list:{(i + 1) % 5}", f"h{i}")
    p.zadd(f"zset:{i % 4}", {f"m{i}": i * 0.5, f"m{i % 7}": -i})
    p.zincrby(f"zset:{(i + 1) % 4}", 1.1, f"m{i % 7}")
    if i % 5 == 3:
        p.lpop(f"list:{i % 5}")
        p.rpop(f"list:{(i + 2) % 5}", 2)
        p.lrem(f"list:{(i + 3) % 5}", 1, f"e{i % 3}")
        p.zpopmin(f"zset:{(i + 2) % 4}")
        p.zrem(f"zset:{(i + 3) % 4}", f"m{i % 7}")
    if i % 9 == 7:
        p.lmove(f"list:{i % 5}", f"list:{(i + 1) % 5}", "LEFT", "RIGHT")
        p.lmove(f"list:{i % 5}", f"moved-list:{i}", "RIGHT", "LEFT")
        p.ltrim(f"list:{(i + 4) % 5}", 1, -1)
        p.linsert(f"list:{(i + 1) % 5}", "BEFORE", f"h{i}", "before")
        p.zunionstore(f"zunion:{i % 3}", [f"zset:{i % 4}", f"zset:{(i + 1) % 4}"])
        p.sort(f"zset:{i % 4}", alpha=True, store=f"sorted:{i % 2}")  # a kv.put of a list
        p.sort(f"list:{(i + 3) % 5}", by="nosort", desc=True, store=f"sorted:{(i + 1) % 2}")
        p.sort("no-such-list", store=f"sorted:{i % 3}")  # empty: kv.del when it exists
        p.zremrangebyscore(f"zset:{(i + 1) % 4}", "(0", 3)
        p.zadd(f"zset:{i % 4}", {f"m{i % 7}": 100}, gt=True, ch=True)
        p.pexpire(f"list:{(i + 2) % 5}", 7_200_000)
        p.expire(f"zset:{(i + 3) % 4}", 3600)


def _read_list(p: Any, key: bytes) -> None:
    p.lrange(key, 0, -1)


def _read_zset(p: Any, key: bytes) -> None:
    p.zrange(key, 0, -1, withscores=True)


def _read_vectorset(p: Any, key: bytes) -> None:
    p.execute_command("VRANGE", key, "-", "+")


def _read_string(p: Any, key: bytes) -> None:
    p.get(key)


def _read_hash(p: Any, key: bytes) -> None:
    p.hgetall(key)


def _read_set(p: Any, key: bytes) -> None:
    p.smembers(key)


#: TYPE -> (queue the read of a key of that type, turn the reply into a plain value); a new
#: type adds its row here so every persistence and replication test compares it too
VALUE_READERS: dict[str, tuple[Any, Any]] = {
    "string": (_read_string, lambda v: v),
    "hash": (_read_hash, lambda v: sorted(v.items())),
    "set": (_read_set, sorted),
    "list": (_read_list, list),
    "zset": (_read_zset, lambda v: [tuple(pair) for pair in v]),
    "vectorset": (_read_vectorset, list),
}


def _scan_ids(r: redis.Redis, kind: str) -> list[bytes]:
    ids: list[bytes] = []
    cursor = b"0"
    while True:
        cursor, batch = r.execute_command("AMEM.SCAN", cursor, "TYPE", kind, "COUNT", 1000)
        ids.extend(batch)
        if cursor in (b"0", 0, "0"):
            return sorted(ids)


def _server_ms(r: redis.Redis) -> int:
    seconds, micros = r.time()
    return int(seconds) * 1000 + int(micros) // 1000


def _deadline(r: redis.Redis, ttl_ms: int) -> Any:
    if ttl_ms < 0:
        return ttl_ms  # -1 none, -2 missing
    return ("at", _server_ms(r) + ttl_ms)


def _num(value: Any) -> Any:
    return float(value) if isinstance(value, bytes) else value


def _fact(rec: dict[Any, Any]) -> dict[Any, Any]:
    out = dict(rec)
    for field in (b"confidence", b"similarity"):
        if field in out:
            out[field] = round(float(_num(out[field])), 5)
    return out


def dump(r: redis.Redis) -> dict[str, Any]:
    """The whole state through the commands, in plain values (either protocol)."""
    ex = r.execute_command
    state: dict[str, Any] = {}
    kv = {}
    keys = sorted(r.keys("*"))
    for start in range(0, len(keys), 2000):
        chunk = keys[start : start + 2000]
        p = r.pipeline(transaction=False)
        for key in chunk:
            p.type(key)
        types = [t.decode() if isinstance(t, bytes) else t for t in p.execute()]
        p = r.pipeline(transaction=False)
        p.time()
        for key, type_name in zip(chunk, types, strict=True):
            VALUE_READERS[type_name][0](p, key)
            p.pttl(key)
        replies = p.execute()
        seconds, micros = replies[0]
        now = int(seconds) * 1000 + int(micros) // 1000
        for i, (key, type_name) in enumerate(zip(chunk, types, strict=True)):
            ttl = replies[2 + 2 * i]
            value = VALUE_READERS[type_name][1](replies[1 + 2 * i])
            kv[key] = (type_name, value, ("at", now + ttl) if ttl >= 0 else ttl)
    state["kv"] = kv
    conv = {}
    for sess in _scan_ids(r, "conv"):
        info = record(ex("AMEM.CONV.INFO", sess))
        ttl = info.pop(b"ttl")
        info[b"ttl"] = _deadline(r, ttl)
        conv[sess] = (info, records(ex("AMEM.CONV.WINDOW", sess)))
    state["conv"] = conv
    work = {}
    for sess in _scan_ids(r, "work"):
        values = record(ex("AMEM.WORK.GETALL", sess))
        work[sess] = {k: (v, _deadline(r, ex("AMEM.WORK.TTL", sess, k))) for k, v in values.items()}
    state["work"] = work
    sem = {}
    rnd = random.Random(99)
    for ns in _scan_ids(r, "sem"):
        # the contract's fields (later additions such as a recall self-check are runtime facts)
        info = {k: v for k, v in record(ex("AMEM.SEM.INFO", ns)).items() if k in SEM_INFO_FIELDS}
        facts: list[dict[Any, Any]] = []
        cursor = b"0"
        while True:
            cursor, batch = ex("AMEM.SEM.LIST", ns, "CURSOR", cursor, "COUNT", 1000)
            facts.extend(_fact(rec) for rec in records(batch))
            if cursor in (b"0", 0, "0"):
                break
        recalls = []
        if info[b"count"]:
            for _ in range(3):
                hits = records(ex("AMEM.SEM.RECALL", ns, 5, "FP32", fp32(vector(rnd)),
                                  "WITHVECTORS"))
                recalls.append([_fact(h) for h in hits])
        sem[ns] = (info, facts, recalls)
    state["sem"] = sem
    state["epis"] = {
        agent: records(ex("AMEM.EPIS.QUERY", agent, "LIMIT", 10000))
        for agent in _scan_ids(r, "epis")
    }
    state["summary"] = {agent: record(ex("AMEM.SUMMARY.GET", agent, "RECORD")) for agent in _scan_ids(r, "summary")}
    state["dbsize"] = r.dbsize()
    return state


def assert_same_state(before: dict[str, Any], after: dict[str, Any]) -> None:
    """Equal dumps, deadlines compared within DEADLINE_SLACK_MS."""
    assert before.keys() == after.keys()
    for store in before:
        _compare(before[store], after[store], [store])


def _compare(a: Any, b: Any, path: list[Any]) -> None:
    if isinstance(a, tuple) and len(a) == 2 and a[0] == "at":
        assert isinstance(b, tuple) and b[0] == "at", (path, a, b)
        assert abs(a[1] - b[1]) <= DEADLINE_SLACK_MS, (path, a, b)
        return
    if isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), (path, a, b)
        for key in a:
            _compare(a[key], b[key], [*path, key])
        return
    if isinstance(a, list | tuple):
        assert isinstance(b, list | tuple) and len(a) == len(b), (path, a, b)
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _compare(x, y, [*path, i])
        return
    assert a == b, (path, a, b)


def wait_until(predicate: Any, timeout: float = 10.0, interval: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")


def persistence_info(r: redis.Redis) -> dict[str, Any]:
    info = r.info("persistence")
    return {k if isinstance(k, str) else k.decode(): v for k, v in info.items()}


def wait_rewrite_done(r: redis.Redis, timeout: float = 20.0) -> dict[str, Any]:
    """Wait until no rewrite runs; return INFO persistence."""
    box: dict[str, Any] = {}

    def done() -> bool:
        box.update(persistence_info(r))
        return int(box["aof_rewrite_in_progress"]) == 0

    wait_until(done, timeout)
    return box
