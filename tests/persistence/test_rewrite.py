"""Rewrites, SAVE, INFO persistence and write failures against a real server."""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from helpers import HotkvProcess
from hotkv_server.persistence.manifest import Layout
from persistence.pdata import (
    assert_same_state,
    dump,
    persistence_info,
    populate,
    wait_rewrite_done,
    wait_until,
)


def server(procs: list[HotkvProcess], data_dir: Any, *args: str) -> HotkvProcess:
    proc = HotkvProcess("--appendonly", "yes", *args, dir=str(data_dir))
    procs.append(proc)
    return proc.start()


def files_size(data_dir: Any) -> int:
    layout = Layout(str(data_dir))
    manifest = layout.read_manifest()
    assert manifest is not None
    return sum(os.path.getsize(layout.path(e.name)) for e in manifest.entries())


def fill(r: redis.Redis, n: int, prefix: str = "bulk") -> None:
    for start in range(0, n, 1000):
        r.mset({f"{prefix}:{i}": f"value-{i}" * 3 for i in range(start, min(n, start + 1000))})


@pytest.mark.slow
def test_bgrewriteaof_while_serving(procs: list[HotkvProcess], tmp_path: Path) -> None:
    proc = server(procs, tmp_path)
    r = proc.client()
    fill(r, 30_000)
    populate(r, seed=11, rounds=20)
    p = r.pipeline(transaction=False)
    p.bgrewriteaof()
    p.bgrewriteaof()
    p.save()
    p.info("persistence")
    p.set("during", "the rewrite")
    first, second, save, info, during = p.execute(raise_on_error=False)
    assert first in (b"Background append only file rewriting started",
                     "Background append only file rewriting started")
    assert isinstance(second, redis.ResponseError)
    assert str(second) == "Background append only file rewriting already in progress"
    assert isinstance(save, redis.ResponseError) and "Background save already in progress" in str(save)
    assert info["aof_rewrite_in_progress"] == 1 and info["aof_current_rewrite_time_sec"] >= 0
    assert during is True
    # the manifest lists the old files and the new increment while the child works (written
    # before the fork, so before the reply; the child has 30k keys to write)
    layout = Layout(str(tmp_path))
    manifest = layout.read_manifest()
    assert manifest is not None and [e.seq for e in manifest.incrs] in ([1, 2], [2])
    fill(r, 500, "while")
    r.delete("bulk:7")
    info = wait_rewrite_done(r)
    assert info["aof_last_bgrewrite_status"] == "ok" and info["aof_rewrites"] == 1
    manifest = layout.read_manifest()
    assert manifest is not None and manifest.base is not None
    assert [e.name for e in manifest.entries()] == ["appendonly.aof.1.base.hkv", "appendonly.aof.2.incr.aof"]
    assert sorted(os.listdir(layout.aof_dir)) == sorted(
        ["appendonly.aof.1.base.hkv", "appendonly.aof.2.incr.aof", "appendonly.aof.manifest"])
    assert info["aof_base_size"] == os.path.getsize(layout.path("appendonly.aof.1.base.hkv"))
    assert info["aof_current_size"] == files_size(tmp_path)
    before = dump(r)
    assert before["kv"][b"during"][1] == b"the rewrite" and b"bulk:7" not in before["kv"]
    proc.kill()
    proc.start()
    assert_same_state(before, dump(proc.client()))


def test_writes_while_the_rewrite_starts_survive_a_kill(procs: list[HotkvProcess],
                                                        tmp_path: Path) -> None:
    """BGREWRITEAOF answers once a thread has made its new increment and manifest and the
    child is forked; the client's pipelined requests wait for it. SIGKILL at once (just
    after the fork) and after the rewrite: nothing answered is lost, a second BGREWRITEAOF
    and BGSAVE are refused as while a child runs."""
    proc = server(procs, tmp_path, "--appendfsync", "always")
    acknowledged: dict[str, str] = {}
    for round_no in range(6):
        r = proc.client(decode_responses=True)
        assert {k: r.get(k) for k in acknowledged} == acknowledged
        fill(r, 2000, f"r{round_no}")
        p = r.pipeline(transaction=False)
        p.set(f"before:{round_no}", "x")
        p.bgrewriteaof()
        p.set(f"during:{round_no}", "y")  # held until the reply: after the fork
        p.bgrewriteaof()
        p.bgsave()
        p.set(f"after:{round_no}", "z")
        replies = p.execute(raise_on_error=False)
        assert replies[1] in (b"Background append only file rewriting started",
                              "Background append only file rewriting started")
        assert str(replies[3]) == "Background append only file rewriting already in progress"
        assert "Background save already in progress" in str(replies[4])
        acknowledged.update({f"before:{round_no}": "x", f"during:{round_no}": "y",
                             f"after:{round_no}": "z"})
        if round_no % 2:
            wait_rewrite_done(r)
        r.set(f"last:{round_no}", "w")
        acknowledged[f"last:{round_no}"] = "w"
        proc.kill()
        proc.start()
    r = proc.client(decode_responses=True)
    assert {k: r.get(k) for k in acknowledged} == acknowledged
    assert r.dbsize() == 6 * 2000 + len(acknowledged)
    assert "Background append only file rewriting started by pid" in proc.log()


def test_automatic_rewrite_by_growth(procs: list[HotkvProcess], tmp_path: Path) -> None:
    proc = server(procs, tmp_path, "--auto-aof-rewrite-percentage", "100",
                  "--auto-aof-rewrite-min-size", "64kb")
    r = proc.client()
    for round_no in range(200):
        r.set("same-key", "x" * 1000)  # rewriting shrinks this to one record
        if round_no == 40:
            assert persistence_info(r)["aof_rewrites"] == 0  # under min-size: nothing yet
    wait_until(lambda: persistence_info(r)["aof_rewrites"] >= 1)
    info = wait_rewrite_done(r)
    assert info["aof_last_bgrewrite_status"] == "ok"
    # the base holds the one key; what the loop wrote after the fork is in the incr file,
    # however far the loop had come when the rewrite started (a loaded machine is slow)
    assert int(info["aof_base_size"]) < 4 * 1024
    assert info["aof_current_size"] < 200 * 1000
    assert "Starting automatic rewriting of AOF on" in proc.log()
    # percentage 0 switches it off
    r.config_set("auto-aof-rewrite-percentage", 0)
    for _ in range(200):
        r.set("same-key", "y" * 1000)
    time.sleep(0.3)
    assert persistence_info(r)["aof_rewrites"] == info["aof_rewrites"]
    before = dump(r)
    proc.kill()
    proc.start()
    assert_same_state(before, dump(proc.client()))


def test_info_persistence_save_and_lastsave(procs: list[HotkvProcess], tmp_path: Path) -> None:
    proc = server(procs, tmp_path)
    r = proc.client()
    info = persistence_info(r)
    for field, value in [("loading", 0), ("aof_enabled", 1), ("aof_rewrite_in_progress", 0),
                         ("aof_last_rewrite_status", "ok"), ("aof_last_bgrewrite_status", "ok"),
                         ("aof_last_write_status", "ok"), ("aof_base_size", 0), ("aof_rewrites", 0),
                         ("rdb_changes_since_last_save", 0)]:
        assert info[field] == value, field
    r.set("a", "1")
    r.set("b", "2")
    info = persistence_info(r)
    assert info["rdb_changes_since_last_save"] == 2
    assert info["aof_current_size"] == files_size(tmp_path) > 0
    before = r.lastsave()
    time.sleep(1.05)
    assert r.save() is True
    assert r.lastsave() > before
    info = persistence_info(r)
    assert info["rdb_changes_since_last_save"] == 0 and info["rdb_saves"] == 1
    assert info["aof_base_size"] == info["aof_current_size"] > 0
    assert r.bgsave() in (b"Background saving started", "Background saving started")
    wait_rewrite_done(r)
    assert persistence_info(r)["rdb_last_bgsave_status"] == "ok"


def test_appendfsync_changes_at_run_time(procs: list[HotkvProcess], tmp_path: Path) -> None:
    proc = server(procs, tmp_path, "--appendfsync", "no")
    r = proc.client()
    for policy in ("always", "everysec", "no", "always"):
        assert r.config_set("appendfsync", policy)
        assert persistence_info(r)["aof_fsync_policy"] == policy
        r.set(f"under-{policy}", policy)
    time.sleep(1.2)  # everysec's background fsync had its turn
    proc.kill()
    proc.start()
    assert sorted(proc.client().keys("*")) == [b"under-always", b"under-everysec", b"under-no"]


def _limit_file_size(pid: int, limit: int | None) -> None:
    value = resource.RLIM_INFINITY if limit is None else limit
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (value, resource.RLIM_INFINITY))


@pytest.mark.parametrize("policy", ["always", "everysec"])
def test_a_failed_write_is_never_acknowledged_and_writes_stop(procs: list[HotkvProcess],
                                                              tmp_path: Path, policy: str) -> None:
    """A disk that refuses the AOF (here: RLIMIT_FSIZE, as a full disk would) -> MISCONF."""
    proc = server(procs, tmp_path, "--appendfsync", policy)
    assert proc.proc is not None
    r = proc.client(retry=Retry(NoBackoff(), 0))
    r.set("big", "x" * 20_000)  # the AOF now outgrows the log file, which shares the limit
    aof = Path(tmp_path, "appendonlydir", "appendonly.aof.1.incr.aof")
    size = aof.stat().st_size
    _limit_file_size(proc.proc.pid, size + 200)
    if policy == "always":
        with pytest.raises(redis.ConnectionError):
            r.set("unsaved", "y" * 1000)  # its reply would acknowledge a write the disk refused
    else:
        r.set("unsaved", "y" * 1000)  # everysec promises no more than what the OS got
    assert aof.stat().st_size == size  # the partial record was cut off again
    r2 = proc.client(retry=Retry(NoBackoff(), 0))
    with pytest.raises(redis.ResponseError, match=r"^MISCONF"):
        r2.set("refused", "z")
    assert r2.get("big") == b"x" * 20_000  # reads go on
    info = persistence_info(r2)
    assert info["aof_last_write_status"] == "err"
    assert "Error writing to the AOF file" in proc.log()
    _limit_file_size(proc.proc.pid, None)
    wait_until(lambda: persistence_info(r2)["aof_last_write_status"] == "ok", timeout=5)
    assert r2.set("accepted", "again") is True
    assert "AOF write error looks solved" in proc.log()
    proc.kill()
    proc.start()
    r3 = proc.client()
    assert r3.get("accepted") == b"again" and r3.get("refused") is None
    assert r3.get("unsaved") == b"y" * 1000  # written once the disk took it again


def test_shutdown_during_a_rewrite(procs: list[HotkvProcess], tmp_path: Path) -> None:
    proc = server(procs, tmp_path)
    r = proc.client()
    fill(r, 20_000)
    r.bgrewriteaof()
    r.set("last", "1")
    before = dump(r)
    proc.stop()
    layout = Layout(str(tmp_path))
    assert not [n for n in os.listdir(layout.aof_dir) if n.startswith("temp-")]
    proc.start()
    assert_same_state(before, dump(proc.client()))


def _incr(layout: Layout, seq: int) -> bytes:
    with open(layout.path(layout.incr_name(seq)), "rb") as f:
        return f.read()


def test_bgrewriteaof_answers_after_the_fork(procs: list[HotkvProcess], tmp_path: Path) -> None:
    """The reply waits for the start's thread (the new increment and the manifest naming
    it) and the fork; the client's pipelined write runs after it, so it lands in the new
    increment, and the new increment is listed when the reply arrives."""
    proc = server(procs, tmp_path)
    r = proc.client()
    fill(r, 5000)
    layout = Layout(str(tmp_path))
    for client in (r, proc.client(protocol=3)):
        wait_rewrite_done(client)
        seq = int(persistence_info(client)["aof_rewrites"]) + 2  # the increment it will open
        p = client.pipeline(transaction=False)
        p.bgrewriteaof()
        p.set(f"pipelined:{seq}", "after the fork")
        started, stored = p.execute()
        assert started in (b"Background append only file rewriting started",
                           "Background append only file rewriting started")
        assert stored is True
        manifest = layout.read_manifest()
        assert manifest is not None and seq in [e.seq for e in manifest.incrs]
        assert f"pipelined:{seq}".encode() in _incr(layout, seq)
        assert f"pipelined:{seq}".encode() not in _incr(layout, seq - 1)  # the old one
        info = wait_rewrite_done(client)
        assert info["aof_last_bgrewrite_status"] == "ok"
    assert persistence_info(r)["aof_rewrites"] == 2


def test_a_start_that_fails_answers_an_error(procs: list[HotkvProcess], tmp_path: Path) -> None:
    """The new increment can't be created (its name is taken: the thread's O_EXCL open
    fails): BGREWRITEAOF answers Redis's error, BGSAVE says why; both are logged and in
    INFO, the connection stays usable, nothing is lost and the next request works."""
    proc = server(procs, tmp_path)
    r = proc.client()
    r.set("a", "1")
    layout = Layout(str(tmp_path))
    squatter = Path(layout.path(layout.incr_name(2)))
    squatter.write_bytes(b"")
    with pytest.raises(redis.ResponseError) as rewrite_error:
        r.bgrewriteaof()
    assert str(rewrite_error.value) == ("Can't execute an AOF background rewriting. "
                                        "Please check the server logs for more information.")
    assert r.ping() is True and r.set("b", "2") is True
    info = persistence_info(r)
    assert info["aof_last_bgrewrite_status"] == "err" and info["aof_rewrite_in_progress"] == 0
    with pytest.raises(redis.ResponseError) as save_error:
        r.bgsave()
    assert str(save_error.value).startswith("Can't start the background save: can't create "
                                            "appendonly.aof.2.incr.aof")
    assert persistence_info(r)["rdb_last_bgsave_status"] == "err"
    # inside MULTI the answer can't wait: started at once, the failure only in INFO
    tx = r.pipeline(transaction=True)
    tx.bgsave()
    tx.set("c", "3")
    assert tx.execute()[1] is True
    wait_until(lambda: persistence_info(r)["rdb_bgsave_in_progress"] == 0)
    assert persistence_info(r)["rdb_last_bgsave_status"] == "err"
    assert "Can't start the background rewrite" in proc.log()
    squatter.unlink()
    assert r.bgrewriteaof() in (b"Background append only file rewriting started",
                                "Background append only file rewriting started")
    info = wait_rewrite_done(r)
    assert info["aof_last_bgrewrite_status"] == "ok" and info["aof_rewrites"] == 1
    r.set("d", "4")
    proc.kill()
    proc.start()
    assert proc.client().mget("a", "b", "c", "d") == [b"1", b"2", b"3", b"4"]


def test_bgrewriteaof_in_multi_is_scheduled(procs: list[HotkvProcess], tmp_path: Path) -> None:
    """Inside MULTI the rewrite is scheduled for after EXEC (Redis's reply, at once); one
    running then covers it: logged, no error in a callback."""
    proc = server(procs, tmp_path)
    r = proc.client()
    fill(r, 20_000)
    tx = r.pipeline(transaction=True)
    tx.bgrewriteaof()
    tx.bgrewriteaof()
    tx.set("x", "1")
    assert tx.execute() == [b"Background append only file rewriting scheduled"] * 2 + [True]
    wait_until(lambda: int(persistence_info(r)["aof_rewrites"]) == 1)
    log = proc.log()
    assert "scheduled rewrite not started" in log
    assert "Exception in callback" not in log and "Traceback" not in log
