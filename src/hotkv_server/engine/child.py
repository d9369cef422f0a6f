"""The set-up of a forked child that writes the state of the fork instant somewhere.

Shared by the persistence rewrite (a base file) and the replication full sync (a snapshot
into a pipe). The parent has threads and an event loop, so the child drops what it
inherited and does not need: the parent's signal handlers and the loop's wake-up, and
every descriptor but stdio and the one it writes to (so a restarted server can bind its
port even while an orphaned child runs); it dies with the parent.
"""

from __future__ import annotations

import ctypes
import gc
import os
import signal
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1
try:
    _libc: ctypes.CDLL | None = ctypes.CDLL(None, use_errno=True)
except OSError:  # not Linux/glibc: the child still exits when done
    _libc = None
try:
    _MAX_FD = max(256, min(int(os.sysconf("SC_OPEN_MAX")), 1 << 20))
except (ValueError, OSError):
    _MAX_FD = 65536


def fork_writer(child: Callable[[int, int], object]) -> tuple[int, int]:
    """Fork; the child runs ``child(write_fd, parent_pid)`` (which must end with
    ``os._exit``), the parent gets ``(pid, the non-blocking read end of the pipe)``.

    The parent's collector is frozen (``gc.freeze``) so that it leaves the pages shared
    with the child alone; whoever reaps the child unfreezes it.
    """
    read_fd, write_fd = os.pipe()
    parent = os.getpid()
    gc.freeze()
    try:
        pid = os.fork()
    except OSError:
        gc.unfreeze()
        os.close(read_fd)
        os.close(write_fd)
        raise
    if pid == 0:  # pragma: no cover - runs in the child, seen through the pipe
        child(write_fd, parent)
        os._exit(1)
    os.close(write_fd)
    os.set_blocking(read_fd, False)
    return pid, read_fd


def prepare_child(keep_fd: int, parent: int) -> None:
    """In a freshly forked child: default signals, die with the parent, and close every
    inherited descriptor but stdio and ``keep_fd``."""
    gc.disable()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    try:
        signal.set_wakeup_fd(-1)
    except ValueError:
        pass
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(2)
    os.closerange(3, keep_fd)
    os.closerange(keep_fd + 1, _MAX_FD)
