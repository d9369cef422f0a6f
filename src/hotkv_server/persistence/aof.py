"""The incremental file being appended to, and the thread that fsyncs and closes old files.

The effect sink collects the records of an event-loop turn; at the end of the turn they
are framed together (one frame, ``["tx", [record, ...]]`` when there are several) and
written with one ``write(2)`` before any reply of that turn leaves, whatever the fsync
policy, so a killed process loses nothing it answered. Framing a turn as one unit is
safe because its replies are held until the write: a torn last frame only ever holds
unacknowledged writes (and a frame's records are applied all or none on load). ``fdatasync`` then runs on the event loop
under ``appendfsync always``, and on the worker thread once a second under ``everysec``.

Files are only ever closed by the worker, after the fsyncs queued before the close, so an
fsync can never hit a descriptor number that was closed and reused in between.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from hotkv_server.persistence.framing import frame
from hotkv_server.stores.effect import TX, pack_group, pack_unit

log = logging.getLogger("hotkv")


@dataclass
class AofFile:
    """An incremental file open for appending, with the records not yet written to it."""

    path: str
    fd: int
    size: int  # bytes in the file (records written so far)
    buf: bytearray = field(default_factory=bytearray)
    unsynced: bool = False  # written but not fsynced (everysec, no)
    #: this turn's units of records (``unit_value``, or its msgpack when the effect log
    #: packed it already; the persistence sink appends them), framed into ``buf`` by
    #: ``encode`` (write_out does it first)
    records: list[Any] = field(default_factory=list)
    #: some of ``records`` are bytes
    packed: bool = False

    @classmethod
    def open(cls, path: str, *, create: bool, exclusive: bool = False) -> AofFile:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC
        if create:
            flags |= os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
        fd = os.open(path, flags, 0o644)
        return cls(path, fd, os.fstat(fd).st_size)

    @property
    def pending(self) -> bool:
        """Records or bytes wait to be written."""
        return bool(self.records or self.buf)

    def encode(self) -> None:
        """Frame the units appended since the last write, as one frame (a ``tx`` of them
        when there are several: one msgpack call and one checksum for the turn, about 5x
        cheaper per record than a frame each, for the same records on replay).

        Raises what msgpack raises for a record it cannot encode; the units are dropped
        then (the caller arranges a fresh rewrite from memory, which covers them).
        """
        units = self.records
        if not units:
            return
        self.records = []
        if not self.packed:  # none packed yet: the whole turn in one msgpack call
            self.buf += frame(pack_unit(units[0] if len(units) == 1 else [TX, units]))
        else:  # the effect log packed units for the replicas: reuse those bytes
            self.packed = False
            self.buf += frame(pack_group([unit if type(unit) is bytes else pack_unit(unit)
                                          for unit in units]))

    def write_out(self) -> None:
        """Write the whole buffer; on failure cut the file back and keep the buffer.

        Raises OSError. If even the cut fails, the OSError carries ``torn_file = True``:
        the file then ends with a partial record and must not be appended to any more.
        """
        self.encode()
        buf = self.buf
        if not buf:
            return
        view = memoryview(buf)
        written = 0
        try:
            while written < len(view):
                written += os.write(self.fd, view[written:])
        except OSError as exc:
            view.release()
            if written:
                try:
                    os.ftruncate(self.fd, self.size)
                except OSError:
                    exc.torn_file = True  # type: ignore[attr-defined]
            raise
        view.release()
        self.size += written
        self.buf = bytearray()
        self.unsynced = True


class FsyncWorker:
    """A background thread running fsync and close jobs in the order they were queued."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[str, int]] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="hotkv-aof-fsync", daemon=True)
        # each counter is written by one thread only, so no lock is needed to read the difference
        self._queued = 0
        self._done = 0
        self.error: str | None = None  # the last failed fsync, read by the event loop
        self.last_fsync = time.monotonic()
        self._started = False

    def start(self) -> None:
        if not self._started:
            self._started = True
            self._thread.start()

    @property
    def pending(self) -> int:
        return self._queued - self._done

    def fsync(self, fd: int) -> None:
        self._queued += 1
        self._jobs.put(("fsync", fd))

    def close(self, fd: int, *, fsync_first: bool = True) -> None:
        if fsync_first:
            self.fsync(fd)
        self._queued += 1
        self._jobs.put(("close", fd))

    def stop(self, timeout: float = 30.0) -> None:
        if not self._started:
            return
        self._jobs.put(("stop", -1))
        self._thread.join(timeout)
        self._started = False

    def drain(self) -> None:
        """Run every queued job on the calling thread (used when the thread is stopped)."""
        while True:
            try:
                job, fd = self._jobs.get_nowait()
            except queue.Empty:
                return
            self._do(job, fd)

    def _run(self) -> None:
        while True:
            job, fd = self._jobs.get()
            if job == "stop":
                return
            self._do(job, fd)

    def _do(self, job: str, fd: int) -> None:
        try:
            if job == "fsync":
                os.fdatasync(fd)
                self.last_fsync = time.monotonic()
            elif job == "close":
                os.close(fd)
        except OSError as exc:
            if job == "fsync":
                self.error = f"fsync of the AOF failed: {exc.strerror or exc}"
                log.error("Background AOF fsync failed: %s", exc.strerror or exc)
        finally:
            self._done += 1
