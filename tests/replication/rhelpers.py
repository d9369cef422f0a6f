"""Helpers for the replication tests: groups of real servers, waiting for sync, INFO views."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

import redis

from helpers import HotkvProcess
from persistence.pdata import dump

#: per-server measurements in AMEM.SEM.INFO (each server samples its own index): not data
LOCAL_SEM_FIELDS = (b"recall_estimate", b"recall_sample", b"recall_checked")


def info(r: redis.Redis, section: str) -> dict[str, Any]:
    return {(k if isinstance(k, str) else k.decode()): v for k, v in r.info(section).items()}


def offset(r: redis.Redis) -> int:
    return int(info(r, "replication")["master_repl_offset"])


def sync_counters(r: redis.Redis) -> tuple[int, int, int]:
    stats = info(r, "stats")
    return int(stats["sync_full"]), int(stats["sync_partial_ok"]), int(stats["sync_partial_err"])


def state_of(r: redis.Redis) -> dict[str, Any]:
    """``persistence.pdata.dump`` without the fields each server measures for itself."""
    state = dump(r)
    for info_record, _facts, _recalls in state["sem"].values():
        for name in LOCAL_SEM_FIELDS:
            info_record.pop(name, None)
    return state


def wait_until(predicate: Callable[[], Any], timeout: float = 15.0, interval: float = 0.02,
               what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
        except (redis.ConnectionError, redis.TimeoutError):
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not met within {timeout}s")
        time.sleep(interval)


def link_up(replica: redis.Redis) -> bool:
    fields = info(replica, "replication")
    return fields.get("master_link_status") == "up"


def wait_synced(primary: redis.Redis, *replicas: redis.Redis, timeout: float = 15.0) -> None:
    """Every replica's link is up and it processed everything the primary produced."""
    def done() -> bool:
        target = offset(primary)
        return all(link_up(r) and offset(r) >= target for r in replicas)

    wait_until(done, timeout, what="replicas in sync")


def replica_of(primary: HotkvProcess, *args: str, **kwargs: Any) -> HotkvProcess:
    return HotkvProcess("--replicaof", "127.0.0.1", str(primary.port), *args, **kwargs)


@contextlib.contextmanager
def servers(*procs: HotkvProcess) -> Iterator[tuple[HotkvProcess, ...]]:
    """Start the processes in order; kill and clean every one of them at the end."""
    started: list[HotkvProcess] = []
    try:
        for proc in procs:
            started.append(proc.start())
        yield procs
    finally:
        for proc in procs:
            if proc.proc is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.proc.pid, signal.SIGCONT)  # a stopped process ignores SIGKILL's wait
        for proc in procs:
            proc.cleanup()


def pause(proc: HotkvProcess) -> None:
    assert proc.proc is not None
    os.kill(proc.proc.pid, signal.SIGSTOP)


def resume(proc: HotkvProcess) -> None:
    assert proc.proc is not None
    os.kill(proc.proc.pid, signal.SIGCONT)
