"""Crash tests: kill -9 at random moments loses no acknowledged write (appendfsync always).

Writers hammer one server from several connections with writes to every store (single
commands, pipelines, MULTI/EXEC) and note each write once its reply arrived. The server
is killed with SIGKILL at random moments, also while a rewrite runs (automatic rewrites
are made frequent, and some rounds kill right after BGREWRITEAOF answered), then restarted
on the same directory: it must start, and every acknowledged write must be there.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from helpers import HotkvProcess, record, records
from persistence.pdata import DIM, fp32

ROUNDS = 22
WRITERS = 3


@dataclass
class Ledger:
    """What the server acknowledged, per writer."""

    kv: dict[bytes, bytes] = field(default_factory=dict)
    counter: int = 0
    events: list[bytes] = field(default_factory=list)
    turns: dict[int, bytes] = field(default_factory=dict)
    pad: dict[bytes, bytes] = field(default_factory=dict)
    facts: list[bytes] = field(default_factory=list)
    summary_version: int = 0
    summary_lines: list[bytes] = field(default_factory=list)


def connect(proc: HotkvProcess, protocol: int = 3) -> redis.Redis:
    # no retries: a retried write after a reconnect would blur what was acknowledged
    return proc.client(protocol=protocol, retry=Retry(NoBackoff(), 0), socket_timeout=10)


def writer(proc: HotkvProcess, w: int, ledger: Ledger, seed: int, stop: threading.Event) -> None:
    rnd = random.Random(seed)
    try:
        r = connect(proc, protocol=2 + w % 2)
        n = 0
        while not stop.is_set():
            n += 1
            tag = f"{seed}:{n}".encode()
            op = rnd.randrange(9)
            if op == 0:
                key, value = b"w%d:%s" % (w, tag), b"v" + tag * rnd.randint(1, 20)
                r.set(key, value)
                ledger.kv[key] = value
            elif op == 1:
                ledger.counter = r.incr(f"counter:{w}")
            elif op == 2:
                ledger.events.append(r.execute_command("AMEM.EPIS.LOG", f"agent:{w}", "action",
                                                       b"event " + tag, "WITHID"))
            elif op == 3:
                seq = r.execute_command("AMEM.CONV.APPEND", f"sess:{w}", "user", b"turn " + tag,
                                        "WITHSEQ")
                ledger.turns[seq] = b"turn " + tag
            elif op == 4:
                key = b"k" + tag
                r.execute_command("AMEM.WORK.SET", f"pad:{w}", key, b"v" + tag)
                ledger.pad[key] = b"v" + tag
            elif op == 5:
                fid = b"f" + tag
                r.execute_command("AMEM.SEM.STORE", f"kb:{w}", fid, b"fact " + tag, "FP32",
                                  fp32([rnd.uniform(-1, 1) for _ in range(DIM)]))
                ledger.facts.append(fid)
            elif op == 6:
                line = b"line " + tag
                ledger.summary_version = r.execute_command("AMEM.SUMMARY.APPEND", f"agent:{w}", line)
                ledger.summary_lines.append(line)
            elif op == 7:  # a pipeline: acknowledged when every reply came back
                p = r.pipeline(transaction=False)
                keys = [b"w%d:p%d:%s" % (w, i, tag) for i in range(5)]
                for key in keys:
                    p.set(key, key)
                p.execute()
                for key in keys:
                    ledger.kv[key] = key
            else:  # a transaction over two stores
                t = r.pipeline(transaction=True)
                key = b"w%d:tx:%s" % (w, tag)
                t.set(key, b"tx")
                t.execute_command("AMEM.EPIS.LOG", f"agent:{w}", "decision", b"tx " + tag, "WITHID")
                _, event = t.execute()
                ledger.kv[key] = b"tx"
                ledger.events.append(event)
    except (redis.ConnectionError, redis.TimeoutError, ConnectionError, OSError):
        return  # the server was killed mid-command: that write is not acknowledged


def verify(r: redis.Redis, ledgers: list[Ledger]) -> None:
    for w, led in enumerate(ledgers):
        keys = list(led.kv)
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            assert r.mget(chunk) == [led.kv[k] for k in chunk], f"writer {w}: lost a SET"
        value = int(r.get(f"counter:{w}") or 0)
        assert led.counter <= value <= led.counter + 1, f"writer {w}: INCR at {value}, acked {led.counter}"
        ids = {rec[b"id"] for rec in records(r.execute_command("AMEM.EPIS.QUERY", f"agent:{w}",
                                                                 "LIMIT", 10000))}
        assert set(led.events) <= ids, f"writer {w}: lost an event"
        turns = {t[b"seq"]: t[b"content"] for t in records(r.execute_command("AMEM.CONV.WINDOW",
                                                                               f"sess:{w}"))}
        for seq, content in led.turns.items():
            assert turns.get(seq) == content, f"writer {w}: lost turn {seq}"
        pad = record(r.execute_command("AMEM.WORK.GETALL", f"pad:{w}"))
        for pkey, pvalue in led.pad.items():
            assert pad.get(pkey) == pvalue, f"writer {w}: lost work key {pkey!r}"
        p = r.pipeline(transaction=False)
        for fid in led.facts:
            p.execute_command("AMEM.SEM.GET", f"kb:{w}", fid)
        for fid, got in zip(led.facts, p.execute(), strict=True):
            assert got is not None and record(got)[b"id"] == fid, f"writer {w}: lost fact {fid!r}"
        summary = r.execute_command("AMEM.SUMMARY.GET", f"agent:{w}", "RECORD")
        if led.summary_version:
            rec = record(summary)
            assert rec[b"version"] >= led.summary_version
            lines = set(rec[b"text"].split(b"\n"))
            assert set(led.summary_lines) <= lines, f"writer {w}: lost a summary line"


@pytest.fixture
def proc(tmp_path: Any) -> Iterator[HotkvProcess]:
    p = HotkvProcess("--appendonly", "yes", "--appendfsync", "always",
                     # rewrites all the time, so that kills land inside them too
                     "--auto-aof-rewrite-percentage", "5", "--auto-aof-rewrite-min-size", "8kb",
                     dir=str(tmp_path))
    yield p
    p.kill()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_kill_9_loses_no_acknowledged_write(proc: HotkvProcess) -> None:
    rnd = random.Random(2024)
    ledgers = [Ledger() for _ in range(WRITERS)]
    for round_no in range(ROUNDS):
        proc.start()
        r = connect(proc)
        verify(r, ledgers)
        if round_no == 0:
            for w in range(WRITERS):
                r.execute_command("AMEM.CONV.CREATE", f"sess:{w}", "WINDOW", 100000)
                r.execute_command("AMEM.SEM.CREATE", f"kb:{w}", DIM)
        stop = threading.Event()
        threads = [threading.Thread(target=writer, args=(proc, w, ledgers[w], rnd.randrange(1 << 30), stop))
                   for w in range(WRITERS)]
        for t in threads:
            t.start()
        time.sleep(rnd.uniform(0.05, 0.35))
        if round_no % 3 == 1:
            try:
                r.bgrewriteaof()  # then kill while the child writes the base
            except redis.ResponseError as exc:  # an automatic one is running: as good
                assert "already in progress" in str(exc)
        proc.kill()
        stop.set()
        for t in threads:
            t.join(10)
        r.close()
    proc.start()
    verify(connect(proc), ledgers)
    total = sum(len(led.kv) + len(led.events) + len(led.turns) + len(led.pad) for led in ledgers)
    assert total > ROUNDS * 20, "the writers hardly wrote anything"
    log = proc.log()
    # the rewrites that were killed left temp files that the next start removed
    assert log.count("left by an interrupted rewrite") >= 2
    assert "Background AOF rewrite finished successfully" in log
