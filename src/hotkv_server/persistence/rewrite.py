"""The forked child that writes a base snapshot while the parent keeps serving.

``fork()`` gives the child a copy-on-write image of the database at one instant, as Redis
does for BGSAVE and BGREWRITEAOF. The parent process has threads (the fsync worker) and
an event loop (uvloop), so the child does only this: drop what it inherited and does not
need (listening and client sockets, so a restarted server can bind its port even while an
orphaned child runs; the loop's signal wake-up), serialise ``Database.snapshot()``, write
and fsync the temp file, report through a pipe, and leave with ``os._exit`` (no atexit
handlers, no loop shutdown, no buffered output of the parent flushed twice).
"""

from __future__ import annotations

import gc
import os
import signal
from dataclasses import dataclass
from typing import NoReturn

from hotkv_server.engine.child import fork_writer, prepare_child
from hotkv_server.persistence.snapshot import write_base_file
from hotkv_server.stores.database import Database


@dataclass
class ChildResult:
    ok: bool
    message: str  # "ok <bytes>" or the error


def spawn(db: Database, temp_path: str, now_ms: int) -> tuple[int, int]:
    """Fork a child writing the base to ``temp_path``; return (pid, read end of its pipe)."""
    return fork_writer(lambda report_fd, parent: _child(db, temp_path, now_ms, report_fd, parent))


def _child(db: Database, temp_path: str, now_ms: int, report_fd: int, parent: int) -> NoReturn:
    try:
        prepare_child(report_fd, parent)
        # the copy may drop what expired: its deadlines are absolute, so nothing changes
        while db.purge_expired(now_ms, 100_000) >= 100_000:
            pass
        size = write_base_file(temp_path, db.snapshot(), now_ms)
        _report(report_fd, f"ok {size}")
        os._exit(0)
    except BaseException as exc:
        try:
            _report(report_fd, f"err {type(exc).__name__}: {exc}")
        finally:
            os._exit(1)


def _report(fd: int, text: str) -> None:
    data = text.encode("utf-8", "replace")[:4000]
    while data:
        data = data[os.write(fd, data) :]


def collect(pid: int, read_fd: int, *, block: bool = False) -> ChildResult | None:
    """The child's result once it has exited (None while it runs, unless ``block``)."""
    try:
        got, status = os.waitpid(pid, 0 if block else os.WNOHANG)
    except ChildProcessError:
        got, status = pid, -1
    if got == 0:
        return None
    try:
        message = os.read(read_fd, 8192).decode("utf-8", "replace")
    except OSError:
        message = ""
    finally:
        os.close(read_fd)
        gc.unfreeze()
    if status != -1 and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and message.startswith("ok"):
        return ChildResult(True, message)
    if status != -1 and os.WIFSIGNALED(status):
        return ChildResult(False, message or f"killed by signal {os.WTERMSIG(status)}")
    return ChildResult(False, message or f"exited with status {status}")


def kill(pid: int, read_fd: int) -> None:
    """Stop a running child and reap it."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    collect(pid, read_fd, block=True)
