"""The persistence subsystem driven in-process on a real Core: failure and recovery paths.

The disk failures are real failing system calls: the AOF's descriptor is pointed (dup2)
at a read-only file (write fails with EBADF) or at a pipe (write works, fdatasync fails
with EINVAL), then pointed back.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from hotkv_server.engine.config import load_config
from hotkv_server.engine.core import Core
from hotkv_server.engine.deferred import Deferred
from hotkv_server.engine.errors import RequestRefused
from hotkv_server.engine.replies import ErrorReply
from hotkv_server.persistence import jobs as jobs_module
from hotkv_server.persistence.loader import Loader, read_checked_manifest
from hotkv_server.persistence.manager import AofUnavailable, Persistence
from hotkv_server.stores.database import default_database
from hotkv_server.stores.keyspace_effects import KvSet
from persistence.recording import RecordingTransport


@pytest.fixture
def make(tmp_path: Any) -> Iterator[Any]:
    made: list[Persistence] = []

    def build(*args: str) -> Persistence:
        config = load_config(["--dir", str(tmp_path), "--appendonly", "yes", *args])
        p = Persistence(SimpleNamespace(core=Core(config)))  # type: ignore[arg-type]
        p.prepare()
        asyncio.run(p.started())
        made.append(p)
        return p

    yield build
    for p in made:
        p.close(False)


def write(p: Persistence, *effects: Any) -> None:
    """What dispatch and the connection do for one command and its reply."""
    for effect in effects:
        p.core.effects.emit(effect)
    p.core.effects.flush()
    p.core.turn.make_durable()


def kv(key: bytes, value: bytes) -> KvSet:
    return KvSet(key, value, None)


def reload(p: Persistence) -> list[bytes]:
    db = default_database()
    Loader(p.layout, read_checked_manifest(p.layout), db, truncate_torn_tail=False,
           now_ms=lambda: 0).load_all()
    return sorted(db.kv.ids(0))


def tick_until(p: Persistence, predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        p.tick()
        if predicate():
            return
        time.sleep(0.01)
    raise AssertionError("condition not met")


class Swap:
    """Point an fd at something else for a while (a failing disk, by real syscalls)."""

    def __init__(self, fd: int, replacement: int) -> None:
        self.fd = fd
        self.saved = os.dup(fd)
        os.dup2(replacement, fd)

    def restore(self) -> None:
        os.dup2(self.saved, self.fd)
        os.close(self.saved)


def test_a_failed_write_under_always_raises_before_the_reply_then_recovers(make: Any) -> None:
    p = make("--appendfsync", "always")
    write(p, kv(b"a", b"1"))
    assert p.aof is not None
    readonly = os.open(os.devnull, os.O_RDONLY)
    swap = Swap(p.aof.fd, readonly)
    with pytest.raises(AofUnavailable):
        write(p, kv(b"b", b"2"))
    assert p.core.write_error and "Error writing to the AOF file" in p.core.write_error
    assert dict(p.info())["aof_last_write_status"] == "err"
    write(p, kv(b"c", b"3"))  # (dispatch refuses writes now; a replica link still sends them)
    p.tick()  # a retry within the second is not due yet
    assert p.core.write_error is not None
    swap.restore()
    os.close(readonly)
    p.writer.retry_at = 0.0
    p.tick()
    assert p.core.write_error is None and dict(p.info())["aof_last_write_status"] == "ok"
    assert reload(p) == [b"a", b"b", b"c"]


def test_a_failed_fsync_needs_a_new_base(make: Any) -> None:
    p = make("--appendfsync", "always")
    write(p, kv(b"a", b"1"))
    assert p.aof is not None
    r, w = os.pipe()
    swap = Swap(p.aof.fd, w)
    with pytest.raises(AofUnavailable):
        write(p, kv(b"b", b"2"))  # written into the pipe, then fdatasync fails
    assert "fsync of the AOF file" in (p.core.write_error or "")
    assert p.writer.need_fresh
    swap.restore()
    os.close(w)
    os.close(r)
    p.writer.retry_at = 0.0
    tick_until(p, lambda: p.core.write_error is None and p.jobs.job is None)
    assert p.jobs.rewrites == 1 and not p.writer.need_fresh
    # the new base holds what only memory knew ("b" never reached the file)
    assert reload(p) == [b"a", b"b"]
    write(p, kv(b"c", b"3"))
    assert reload(p) == [b"a", b"b", b"c"]


def test_everysec_fsyncs_from_the_worker_and_failures_stop_writes(make: Any) -> None:
    p = make("--appendfsync", "everysec")
    write(p, kv(b"a", b"1"))
    assert p.aof is not None and p.aof.unsynced
    p.writer.last_fsync_request = 0.0
    p.tick()
    assert not p.aof.unsynced
    tick_until(p, lambda: p.writer.worker.pending == 0)
    r, w = os.pipe()
    swap = Swap(p.aof.fd, w)
    write(p, kv(b"b", b"2"))  # everysec: the reply goes, the fsync comes later
    p.writer.last_fsync_request = 0.0
    p.tick()
    tick_until(p, lambda: p.core.write_error is not None)
    swap.restore()
    os.close(w)
    os.close(r)
    p.writer.retry_at = 0.0
    tick_until(p, lambda: p.core.write_error is None and p.jobs.job is None)
    assert reload(p) == [b"a", b"b"]


def test_dataset_replaced_writes_a_fresh_base(make: Any) -> None:
    p = make()
    write(p, kv(b"old", b"1"))
    other = default_database()
    other.apply(kv(b"new", b"2"))
    p.core.db.restore(other.snapshot())  # as a replica's full resync does
    p.dataset_replaced()
    assert p.jobs.job is not None and p.jobs.job.fresh
    write(p, kv(b"after", b"3"))
    assert reload(p) == [b"old"]  # until the base exists, the disk has the old data
    tick_until(p, lambda: p.jobs.job is None)
    assert reload(p) == [b"after", b"new"]


def test_switching_the_aof_off_and_on(make: Any) -> None:
    p = make()
    write(p, kv(b"a", b"1"))
    p.config_changed("appendonly", False)
    assert p.aof is None and not p.aof_on
    write(p, kv(b"b", b"2"))
    assert reload(p) == [b"a"]
    p.config_changed("appendonly", True)
    assert p.jobs.job is not None and p.jobs.job.fresh
    write(p, kv(b"c", b"3"))
    tick_until(p, lambda: p.jobs.job is None)
    assert reload(p) == [b"a", b"b", b"c"]
    assert not [n for n in os.listdir(p.layout.aof_dir) if n.startswith("temp-")]


def test_close_saves_when_a_fresh_rewrite_did_not_finish(make: Any) -> None:
    p = make()
    p.config_changed("appendonly", False)
    write(p, kv(b"x", b"1"))
    p.config_changed("appendonly", True)
    p.close(None)  # kills the child; the data is saved in the foreground instead
    assert reload(p) == [b"x"]
    assert not [n for n in os.listdir(p.layout.aof_dir) if n.startswith("temp-")]


@pytest.mark.parametrize("policy", ["everysec", "always"])
def test_replies_of_a_turn_leave_after_its_records_are_in_the_file(make: Any, policy: str) -> None:
    """Three clients' reads in one event-loop turn: no reply leaves during the turn; at its
    end the AOF grows once (one frame for all the writes) before the first reply is
    written; a read-only client of that turn waits with the others, in order."""
    from hotkv_server.commands import load_all
    from hotkv_server.server.connection import ClientProtocol

    load_all()
    p = make("--appendfsync", policy)
    assert p.aof is not None
    path = p.aof.path
    log: list[tuple[str, bytes, int]] = []

    async def one_turn() -> int:
        clients = []
        for name in ("a", "b", "reader"):
            protocol = ClientProtocol(p.core)
            protocol.connection_made(RecordingTransport(name, log, lambda: path))  # type: ignore[arg-type]
            clients.append(protocol)
        before = os.path.getsize(path)
        clients[0].data_received(b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$1\r\n1\r\n")
        clients[1].data_received(b"*3\r\n$3\r\nSET\r\n$1\r\ny\r\n$1\r\n2\r\n" * 2)
        clients[2].data_received(b"*2\r\n$3\r\nGET\r\n$1\r\nx\r\n")
        assert log == [] and os.path.getsize(path) == before  # held: the turn is not over
        await asyncio.sleep(0)  # the loop runs end_turn
        return before

    before = asyncio.run(one_turn())
    assert [(name, data) for name, data, _ in log] == [
        ("a", b"+OK\r\n"), ("b", b"+OK\r\n+OK\r\n"), ("reader", b"$1\r\n1\r\n")]
    grown = {size for _, _, size in log}
    assert len(grown) == 1 and grown.pop() > before  # written once, before every reply
    loaded = reload(p)
    assert loaded == [b"x", b"y"]


def _hold_the_install(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """Make the install thread wait in its directory fsync (after the manifest and the
    renames) until ``release`` is set; ``entered`` tells it got there."""
    entered, release = threading.Event(), threading.Event()
    real = jobs_module.fsync_dir

    def held(path: str) -> None:
        if threading.current_thread() is not threading.main_thread():
            entered.set()
            assert release.wait(30)
        real(path)

    monkeypatch.setattr(jobs_module, "fsync_dir", held)
    return entered, release


def test_a_finished_rewrite_is_installed_off_the_loop(make: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The install's fsyncs run on a thread: the loop serves meanwhile, the rewrite counts
    as running until the loop adopts it, and the writes made meanwhile are kept."""
    p = make()
    write(p, kv(b"a", b"1"))
    entered, release = _hold_the_install(monkeypatch)
    assert p.bgrewrite() == "Background append only file rewriting started"
    write(p, kv(b"b", b"2"))  # after the fork: into the new increment
    tick_until(p, entered.is_set)  # the child is done; its install waits in the thread
    p.tick()
    assert p.jobs.job is not None and p.jobs.job.install is not None
    assert dict(p.info())["aof_rewrite_in_progress"] == 1
    with pytest.raises(RequestRefused, match="already in progress"):
        p.bgrewrite()
    with pytest.raises(RequestRefused, match="already in progress"):
        p.save()
    write(p, kv(b"c", b"3"))  # the loop goes on while the install waits
    # the manifest on disk already names the new base and the increment being written
    manifest = p.layout.read_manifest()
    assert manifest is not None and manifest.base is not None
    assert [e.name for e in manifest.entries()] == ["appendonly.aof.1.base.hkv",
                                                    "appendonly.aof.2.incr.aof"]
    assert reload(p) == [b"a", b"b", b"c"]
    release.set()
    tick_until(p, lambda: p.jobs.job is None)
    info = dict(p.info())
    assert info["aof_rewrites"] == 1 and info["aof_last_bgrewrite_status"] == "ok"
    assert info["aof_base_size"] == os.path.getsize(p.layout.path("appendonly.aof.1.base.hkv"))
    assert sorted(os.listdir(p.layout.aof_dir)) == [
        "appendonly.aof.1.base.hkv", "appendonly.aof.2.incr.aof", "appendonly.aof.manifest"]
    write(p, kv(b"d", b"4"))
    assert reload(p) == [b"a", b"b", b"c", b"d"]


def test_the_install_thread_wakes_the_loop(make: Any) -> None:
    """On a running loop, the rewrite is adopted as soon as the thread is done, without
    waiting for another cron tick."""
    p = make()
    write(p, kv(b"a", b"1"))

    async def scenario() -> None:
        p.bgrewrite()
        while p.jobs.preparing is not None:  # the start's thread wakes the loop, too
            await asyncio.sleep(0.01)
        job = p.jobs.job
        assert job is not None
        while job.install is None:  # the cron's part: collect the child, start the install
            p.jobs.reap()
            await asyncio.sleep(0.01)
        while p.jobs.job is not None:  # no reap from here: only the thread's wake-up
            await asyncio.sleep(0.01)

    asyncio.run(asyncio.wait_for(scenario(), 20))
    assert p.jobs.rewrites == 1 and reload(p) == [b"a"]


def test_shutdown_waits_for_an_install_under_way(make: Any,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    p = make()
    write(p, kv(b"a", b"1"))
    entered, release = _hold_the_install(monkeypatch)
    p.bgrewrite()
    write(p, kv(b"b", b"2"))
    tick_until(p, entered.is_set)
    threading.Timer(0.2, release.set).start()
    p.close(False)  # kill(): the base is complete, so it is installed, not dropped
    assert p.jobs.rewrites == 1
    manifest = p.layout.read_manifest()
    assert manifest is not None and manifest.base is not None and not manifest.history
    assert reload(p) == [b"a", b"b"]
    assert not [n for n in os.listdir(p.layout.aof_dir) if n.startswith("temp-")]


def test_a_failed_install_keeps_the_directory_loadable(make: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The manifest can't be written: the rewrite fails, the old files stay the data, the
    temp base is removed and a later rewrite succeeds."""
    p = make()
    write(p, kv(b"a", b"1"))
    real = p.layout.write_manifest
    calls = {"n": 0}

    def refuse_in_thread(manifest: Any, **kwargs: Any) -> None:
        if threading.current_thread() is not threading.main_thread():
            calls["n"] += 1
            raise OSError(28, "No space left on device")
        real(manifest, **kwargs)

    monkeypatch.setattr(p.layout, "write_manifest", refuse_in_thread)
    p.bgrewrite()
    write(p, kv(b"b", b"2"))
    tick_until(p, lambda: p.jobs.job is None)
    assert calls["n"] == 1
    info = dict(p.info())
    assert info["aof_last_bgrewrite_status"] == "err" and info["aof_rewrites"] == 0
    assert not [n for n in os.listdir(p.layout.aof_dir) if n.startswith("temp-")]
    assert reload(p) == [b"a", b"b"]
    monkeypatch.setattr(p.layout, "write_manifest", real)
    p.bgrewrite()
    tick_until(p, lambda: p.jobs.job is None)
    assert dict(p.info())["aof_last_bgrewrite_status"] == "ok"
    write(p, kv(b"c", b"3"))
    assert reload(p) == [b"a", b"b", b"c"]


# --- the start's file steps on a thread (a running loop) -----------------------------------


def _hold_the_start(monkeypatch: pytest.MonkeyPatch, *,
                    error: OSError | None = None) -> tuple[threading.Event, threading.Event]:
    """Make a start's thread wait after creating the new increment (in its directory fsync,
    before the manifest) until ``release`` is set, then fail with ``error`` if given."""
    entered, release = threading.Event(), threading.Event()
    real = jobs_module.fsync_dir

    def held(path: str) -> None:
        if threading.current_thread().name == "hotkv-aof-prepare":
            entered.set()
            assert release.wait(30)
            if error is not None:
                raise error
        real(path)

    monkeypatch.setattr(jobs_module, "fsync_dir", held)
    return entered, release


async def _until(predicate: Any, tick: Persistence | None = None, timeout: float = 20.0) -> None:
    """Let the loop run until ``predicate``: only the threads' wake-ups, or also the cron
    of ``tick`` (which collects a finished child)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met"
        if tick is not None:
            tick.tick()
        await asyncio.sleep(0.005)


def _incrs_on_disk(p: Persistence) -> list[int]:
    manifest = p.layout.read_manifest()
    assert manifest is not None
    return [e.seq for e in manifest.incrs]


def test_writes_while_the_start_prepares_go_to_the_old_increment(
        make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """BGREWRITEAOF counts as running while its thread creates the new increment and the
    manifest, and its answer waits for the fork; the loop's writes meanwhile go to the old
    increment (loadable at every step), and the fork follows the thread's wake-up, without
    a tick."""
    p = make()
    write(p, kv(b"a", b"1"))
    entered, release = _hold_the_start(monkeypatch)

    async def scenario() -> None:
        answer = p.bgrewrite()
        assert isinstance(answer, Deferred) and not answer.done
        await _until(entered.is_set)  # the new file exists; no manifest names it yet
        assert p.jobs.preparing is not None and p.jobs.job is None and not answer.done
        info = dict(p.info())
        assert info["aof_rewrite_in_progress"] == 1 and info["aof_current_rewrite_time_sec"] >= 0
        for refused in (p.bgrewrite, p.save, p.bgsave):
            with pytest.raises(RequestRefused, match="already in progress"):
                refused()
        write(p, kv(b"b", b"2"))
        assert p.aof is not None and p.aof.path == p.layout.path("appendonly.aof.1.incr.aof")
        assert os.path.getsize(p.layout.path("appendonly.aof.2.incr.aof")) == 0
        assert _incrs_on_disk(p) == [1] and reload(p) == [b"a", b"b"]
        release.set()
        await _until(lambda: answer.done)  # answered once forked, on the wake-up
        assert answer.value == "Background append only file rewriting started"
        assert p.jobs.job is not None and p.jobs.job.pid > 0
        assert _incrs_on_disk(p) == [1, 2]
        assert p.aof is not None and p.aof.path == p.layout.path("appendonly.aof.2.incr.aof")
        write(p, kv(b"c", b"3"))  # after the fork: the new increment
        assert os.path.getsize(p.layout.path("appendonly.aof.2.incr.aof")) > 0
        assert reload(p) == [b"a", b"b", b"c"]
        await _until(lambda: not p.jobs.busy and p.jobs.rewrites == 1, p)

    asyncio.run(asyncio.wait_for(scenario(), 60))
    manifest = p.layout.read_manifest()
    assert manifest is not None and [e.name for e in manifest.entries()] == [
        "appendonly.aof.1.base.hkv", "appendonly.aof.2.incr.aof"]
    assert reload(p) == [b"a", b"b", b"c"]


def test_a_failed_start_thread_is_counted_and_keeps_the_old_increment(
        make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Disk full while creating the new increment: answered with Redis's error, logged,
    aof_last_bgrewrite_status err, backed off; the new file is removed and its number
    reused (no gap), the writes stay in the old increment, and the next rewrite works."""
    p = make()
    write(p, kv(b"a", b"1"))
    entered, release = _hold_the_start(monkeypatch, error=OSError(28, "No space left on device"))

    async def failing() -> None:
        answer = p.bgrewrite()
        assert isinstance(answer, Deferred)
        await _until(entered.is_set)
        write(p, kv(b"b", b"2"))
        release.set()
        await _until(lambda: answer.done)
        assert isinstance(answer.value, ErrorReply)
        assert answer.value.startswith("ERR Can't execute an AOF background rewriting.")
        assert not p.jobs.busy and p.jobs.job is None

    asyncio.run(asyncio.wait_for(failing(), 60))
    info = dict(p.info())
    assert info["aof_last_bgrewrite_status"] == "err" and info["aof_rewrite_in_progress"] == 0
    assert p.writer.retry_at > time.monotonic()  # the automatic rewrite backs off
    assert sorted(os.listdir(p.layout.aof_dir)) == ["appendonly.aof.1.incr.aof",
                                                    "appendonly.aof.manifest"]
    assert _incrs_on_disk(p) == [1] and reload(p) == [b"a", b"b"]
    monkeypatch.undo()

    async def working() -> None:
        p.bgrewrite()
        await _until(lambda: not p.jobs.busy, p)

    asyncio.run(asyncio.wait_for(working(), 60))
    info = dict(p.info())
    assert info["aof_last_bgrewrite_status"] == "ok" and info["aof_rewrites"] == 1
    manifest = p.layout.read_manifest()
    assert manifest is not None and [e.seq for e in manifest.incrs] == [2]
    write(p, kv(b"c", b"3"))
    assert reload(p) == [b"a", b"b", b"c"]


def test_a_start_failing_after_its_manifest_keeps_the_listed_file(
        make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The directory fsync after the manifest's rename fails: either manifest may be the
    one on disk, so the new, empty increment stays (listed after the old one, which the
    loop goes on writing); the next rewrite numbers on from it."""
    p = make()
    write(p, kv(b"a", b"1"))
    from hotkv_server.persistence import fsutil
    real = fsutil.fsync_dir

    def fail_after_rename(path: str) -> None:
        if threading.current_thread().name == "hotkv-aof-prepare":
            raise OSError(5, "Input/output error")
        real(path)

    monkeypatch.setattr(fsutil, "fsync_dir", fail_after_rename)

    async def failing() -> None:
        p.bgrewrite()
        await _until(lambda: not p.jobs.busy, p)

    asyncio.run(asyncio.wait_for(failing(), 60))
    monkeypatch.undo()
    assert dict(p.info())["aof_last_bgrewrite_status"] == "err"
    assert _incrs_on_disk(p) == [1, 2]
    assert os.path.getsize(p.layout.path("appendonly.aof.2.incr.aof")) == 0
    write(p, kv(b"b", b"2"))  # still the old increment, replayed before the empty one
    assert p.aof is not None and p.aof.path == p.layout.path("appendonly.aof.1.incr.aof")
    assert reload(p) == [b"a", b"b"]

    async def working() -> None:
        p.bgrewrite()
        await _until(lambda: p.jobs.job is not None)
        assert _incrs_on_disk(p) == [1, 2, 3]
        write(p, kv(b"c", b"3"))
        await _until(lambda: not p.jobs.busy, p)

    asyncio.run(asyncio.wait_for(working(), 60))
    assert _incrs_on_disk(p) == [3] and reload(p) == [b"a", b"b", b"c"]


@pytest.mark.parametrize("stop", ["appendonly no", "shutdown", "dataset replaced"])
def test_a_start_stopped_while_it_prepares(make: Any, monkeypatch: pytest.MonkeyPatch,
                                           stop: str) -> None:
    """CONFIG SET appendonly no, shutdown or a replica's full resync while the thread
    works: it is waited for and given up; nothing acknowledged is lost."""
    p = make()
    write(p, kv(b"a", b"1"))
    entered, release = _hold_the_start(monkeypatch)

    async def scenario() -> None:
        answer = p.bgrewrite()
        assert isinstance(answer, Deferred)
        await _until(entered.is_set)
        write(p, kv(b"b", b"2"))
        threading.Timer(0.1, release.set).start()
        if stop == "appendonly no":
            p.config_changed("appendonly", False)
            assert p.aof is None and not p.jobs.busy
        elif stop == "shutdown":
            p.close(False)
        else:
            p.dataset_replaced()  # a fresh rewrite starts at once, on the loop
            assert p.jobs.job is not None and p.jobs.job.fresh
        # the client that asked learns the rewrite did not start, soon (never from inside
        # the stopping call, which may be another client's command)
        assert not answer.done
        await _until(lambda: answer.done)
        assert isinstance(answer.value, ErrorReply) and "AOF background rewriting" in answer.value
        if stop == "dataset replaced":
            await _until(lambda: not p.jobs.busy, p)

    asyncio.run(asyncio.wait_for(scenario(), 60))
    assert reload(p) == [b"a", b"b"]
    names = os.listdir(p.layout.aof_dir)
    assert not [n for n in names if n.startswith("temp-")]
    if stop != "dataset replaced":
        # the prepared increment was listed (the thread finished): kept, empty, after the old
        assert _incrs_on_disk(p) == [1, 2]
        assert os.path.getsize(p.layout.path("appendonly.aof.2.incr.aof")) == 0
