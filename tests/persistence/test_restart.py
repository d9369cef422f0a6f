"""Restart tests: every store and the string cache come back exactly, under each fsync policy.

Each test starts a real hotkv-server with ``--appendonly yes``, writes a mixed workload
through the commands, dumps the whole state through the commands, restarts the server
(clean SIGTERM, SIGKILL, after a rewrite, after SAVE) and compares full dumps.
"""

from __future__ import annotations

import os

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from helpers import HotkvProcess
from persistence.pdata import assert_same_state, dump, persistence_info, populate, wait_rewrite_done


def server(data_dir: str, *args: str) -> HotkvProcess:
    return HotkvProcess("--appendonly", "yes", *args, dir=data_dir)


@pytest.mark.parametrize(("policy", "protocol"), [("always", 3), ("everysec", 2), ("no", 3),
                                                  ("always", 2)])
def test_restart_keeps_every_store(policy: str, protocol: int, data_dir: str,
                                   procs: list[HotkvProcess]) -> None:
    proc = server(data_dir, "--appendfsync", policy)
    procs.append(proc)
    proc.start()
    r = proc.client(protocol=protocol)
    populate(r)
    before = dump(r)
    assert before["kv"] and before["conv"] and before["work"] and before["sem"]
    assert before["epis"] and before["summary"]
    assert {"string", "hash", "set"} <= {entry[0] for entry in before["kv"].values()}

    proc.restart()  # SIGTERM: flush and fsync
    after = dump(proc.client(protocol=protocol))
    assert_same_state(before, after)

    # a killed process loses nothing either: every record was written before its reply
    proc.client().set("after-restart", "1")
    before = dump(proc.client(protocol=protocol))
    proc.kill()
    proc.start()
    assert_same_state(before, dump(proc.client(protocol=protocol)))


@pytest.mark.parametrize("policy", ["always", "everysec", "no"])
def test_restart_after_rewrite_and_save(policy: str, data_dir: str,
                                        procs: list[HotkvProcess]) -> None:
    proc = server(data_dir, "--appendfsync", policy)
    procs.append(proc)
    proc.start()
    r = proc.client()
    populate(r, seed=1, rounds=30)
    assert r.bgrewriteaof() in (b"Background append only file rewriting started",
                                "Background append only file rewriting started")
    populate(r, seed=2, rounds=20)  # lands in the new incremental file while the child writes
    info = wait_rewrite_done(r)
    assert info["aof_last_bgrewrite_status"] == "ok" and int(info["aof_rewrites"]) == 1
    assert int(info["aof_base_size"]) > 0
    before = dump(r)
    proc.kill()
    proc.start()
    r = proc.client()
    assert_same_state(before, dump(r))

    r.set("before-save", "x")
    assert r.save() is True
    r.set("after-save", "y")
    before = dump(r)
    proc.kill()
    proc.start()
    assert_same_state(before, dump(proc.client()))
    files = sorted(os.listdir(os.path.join(data_dir, "appendonlydir")))
    assert files == ["appendonly.aof.2.base.hkv", "appendonly.aof.3.incr.aof",
                     "appendonly.aof.manifest"]


def test_sem_index_is_restored_not_rebuilt(data_dir: str, procs: list[HotkvProcess]) -> None:
    """After a rewrite the HNSW index comes from the base: recall results are identical."""
    proc = server(data_dir)
    procs.append(proc)
    proc.start()
    r = proc.client()
    populate(r, seed=3, rounds=40)
    r.bgrewriteaof()
    wait_rewrite_done(r)
    before = dump(r)
    proc.restart()
    after = dump(proc.client())
    assert before["sem"] == after["sem"]
    log = proc.log()
    assert "0 records replayed after the base" in log.rsplit("DB loaded from", 1)[1]


def test_appendonly_no_save_and_reload(data_dir: str, procs: list[HotkvProcess]) -> None:
    """Without the AOF nothing survives a restart unless SAVE wrote a base."""
    proc = HotkvProcess("--appendonly", "no", dir=data_dir)
    procs.append(proc)
    proc.start()
    r = proc.client()
    populate(r, seed=4, rounds=20)
    before = dump(r)
    assert r.save() is True
    r.set("not-saved", "1")
    proc.kill()
    proc.start()
    assert_same_state(before, dump(proc.client()))
    assert sorted(os.listdir(os.path.join(data_dir, "appendonlydir"))) == [
        "appendonly.aof.1.base.hkv", "appendonly.aof.manifest"]
    # switching the AOF on at start keeps the saved base and adds an increment after it
    proc.stop()
    on = server(data_dir)
    procs.append(on)
    on.start()
    r = on.client()
    assert_same_state(before, dump(r))
    r.set("with-aof", "1")
    before = dump(r)
    on.kill()
    on.start()
    assert_same_state(before, dump(on.client()))


def test_config_set_appendonly_at_run_time(data_dir: str, procs: list[HotkvProcess]) -> None:
    proc = HotkvProcess("--appendonly", "no", dir=data_dir)
    procs.append(proc)
    proc.start()
    r = proc.client()
    populate(r, seed=5, rounds=15)
    assert r.config_set("appendonly", "yes")
    r.set("during-first-rewrite", "1")
    info = wait_rewrite_done(r)
    assert info["aof_enabled"] == 1 and info["aof_last_bgrewrite_status"] == "ok"
    r.set("after-first-rewrite", "2")
    before = dump(r)
    proc.kill()
    on = server(data_dir)
    procs.append(on)
    on.start()
    r = on.client()
    assert_same_state(before, dump(r))
    # and off again: nothing more is appended
    assert r.config_set("appendonly", "no")
    assert persistence_info(r)["aof_enabled"] == 0
    size = sum(os.path.getsize(os.path.join(data_dir, "appendonlydir", n))
               for n in os.listdir(os.path.join(data_dir, "appendonlydir")))
    r.set("not-logged", "1")
    on.stop()
    assert size == sum(os.path.getsize(os.path.join(data_dir, "appendonlydir", n))
                       for n in os.listdir(os.path.join(data_dir, "appendonlydir")))


def test_shutdown_save_and_nosave(data_dir: str, procs: list[HotkvProcess]) -> None:
    proc = server(data_dir)
    procs.append(proc)
    proc.start()
    r = proc.client(retry=Retry(NoBackoff(), 0))
    populate(r, seed=6, rounds=10)
    before = dump(r)
    try:
        r.shutdown(save=True)
    except redis.ConnectionError:  # SHUTDOWN answers nothing: the connection closes
        pass
    assert proc.proc is not None and proc.proc.wait(10) == 0
    proc.proc = None
    names = os.listdir(os.path.join(data_dir, "appendonlydir"))
    assert any(n.endswith(".base.hkv") for n in names)
    proc.start()
    r = proc.client(retry=Retry(NoBackoff(), 0))
    assert_same_state(before, dump(r))
    r.set("nosave", "kept by the AOF")
    try:
        r.shutdown(nosave=True)
    except redis.ConnectionError:  # SHUTDOWN answers nothing: the connection closes
        pass
    assert proc.proc is not None and proc.proc.wait(10) == 0
    proc.proc = None
    proc.start()
    assert proc.client().get("nosave") == b"kept by the AOF"


@pytest.mark.parametrize("policy", ["everysec", "always"])
def test_replies_held_for_the_turn_ack_only_written_data(policy: str, data_dir: str,
                                                         procs: list[HotkvProcess]) -> None:
    """Many clients write at once: the AOF is written once per event-loop turn for all of
    them and their replies leave only after it. A kill -9 right after the last reply loses
    none of them, each client sees its replies in order, and reads in the same turns (which
    wait behind the writes of other clients) answer the right values."""
    import asyncio

    import redis.asyncio as aredis

    proc = server(data_dir, "--appendfsync", policy)
    procs.append(proc)
    proc.start()

    async def writer(n: int) -> list[object]:
        client = aredis.Redis(port=proc.port, protocol=2 + n % 2)
        replies: list[object] = []
        try:
            for round_ in range(20):
                pipe = client.pipeline(transaction=False)
                for i in range(8):
                    pipe.set(f"c{n}:{round_}:{i}", f"{n}-{round_}-{i}")
                    pipe.get(f"c{n}:{round_}:{i}")
                pipe.execute_command("AMEM.WORK.SET", f"s{n}", f"r{round_}", str(round_))
                replies.extend(await pipe.execute())
        finally:
            await client.aclose()
        return replies

    async def run() -> list[list[object]]:
        return await asyncio.gather(*(writer(n) for n in range(12)))

    every = asyncio.run(run())
    for n, replies in enumerate(every):
        expected: list[object] = []
        for round_ in range(20):
            for i in range(8):
                expected += [True, f"{n}-{round_}-{i}".encode()]
            expected.append(b"OK")
        assert replies == expected
    proc.kill()
    proc.start()
    r = proc.client()
    for n in range(12):
        assert r.get(f"c{n}:19:7") == f"{n}-19-7".encode()
        assert r.execute_command("AMEM.WORK.GET", f"s{n}", "r19") == b"19"
    assert r.dbsize() == 12 * 20 * 8
