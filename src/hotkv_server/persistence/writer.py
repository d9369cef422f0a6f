"""The AOF write path of a running server: the effect sink, the turn's write, fsync, failures.

``AofWriter`` is the effect sink while an incremental file is open: it buffers each unit of
records, raises the reply barrier, and at the end of the turn (``before_reply``, the turn's
durable work) writes the buffer, with ``fdatasync`` under ``appendfsync always``. A failed
write or fsync puts it in the failing state (``core.write_error``: the dispatch point
answers ``MISCONF`` to writes) until a retry from the cron succeeds or, when the file may
hold a partial record or lost pages (``need_fresh``), a fresh rewrite has written a new base.
The files and the forked jobs are ``persistence.jobs``; the facade is ``persistence.manager``.
"""

from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING

from hotkv_server.engine.turn import RepliesWithheld
from hotkv_server.engine.watched import Watched
from hotkv_server.persistence.aof import AofFile, FsyncWorker
from hotkv_server.stores.effect import TX

if TYPE_CHECKING:
    from hotkv_server.engine.core import Core
    from hotkv_server.stores.effect import Effect

log = logging.getLogger("hotkv")


class AofUnavailable(RepliesWithheld, OSError):
    """Raised before replies that would acknowledge writes the AOF could not keep."""


class AofWriter:
    """The open incremental file, its fsync thread and the write-failure state."""

    #: effect sink: the AOF packs its turn's units itself, in one call (``AofFile.encode``)
    wants_bytes = False

    def __init__(self, core: Core, aof_on: bool) -> None:
        self.core = core
        self.aof_on = aof_on  # appendonly yes (the file may not be open yet: loading)
        self._aof: AofFile | None = None
        self.worker = FsyncWorker()
        self.write_status = "ok"
        self.write_failing = False  # the buffer could not be written: retried from tick
        self.lost_in_turn = False  # records of this turn could not be encoded
        self.need_fresh = False  # the files do not cover the memory: a fresh rewrite must run
        self.failures = 0
        self.retry_at = 0.0  # monotonic time of the next retry (a write, or a job start)
        self.last_fsync_request = time.monotonic()

    #: the open incremental AOF file, None with ``appendonly no`` (or not yet open); the
    #: writer is the effect sink while there is one
    aof: Watched[AofFile | None] = Watched("_aof", "_aof_changed")

    def _aof_changed(self, aof: AofFile | None) -> None:
        self.core.effects.set_sink(self, aof is not None)

    def always(self) -> bool:
        return self.core.config.appendfsync == "always"

    # --- the effect sink ---------------------------------------------------------------
    def write_effects(self, records: list[Effect], payload: bytes | None) -> None:
        """Effect sink: one unit of records, framed with the rest of the turn's in flush."""
        aof = self._aof
        if aof is not None:
            if payload is None:  # (AofFile.add, inlined: this runs on every write)
                aof.records.append(records[0] if len(records) == 1 else [TX, records])
            else:
                aof.packed = True
                aof.records.append(payload)
            self.core.turn.barrier = True  # acknowledged only once written: end of turn

    def effects_lost(self, reason: str) -> None:
        """Effect sink: applied records could not be encoded; the files no longer cover the
        memory, so a fresh rewrite must run, and under ``always`` this turn's replies
        (which would acknowledge them) never leave."""
        self.failed(reason, fresh=True)
        self.lost_in_turn = True
        self.core.turn.barrier = True

    def before_reply(self) -> None:
        """The turn's durable work: write the turn's records (fsync under always)."""
        if self.lost_in_turn:
            self.lost_in_turn = False
            if self.always():
                raise AofUnavailable("an effect could not be encoded")
        aof = self._aof
        if aof is None or not aof.pending or self.write_failing:
            return
        self.flush(aof, strict=True)

    def flush(self, aof: AofFile, *, strict: bool) -> bool:
        """Write the buffer (and fdatasync under always); False on failure.

        ``strict`` (a batch of replies is waiting): under ``always`` a failure raises, so
        that the replies which would acknowledge unsaved writes are never sent.
        """
        always = self.always()
        try:
            aof.encode()
        except Exception as exc:  # a store bug: an effect msgpack cannot encode
            log.exception("Can't encode an effect for the AOF")
            self.failed(f"an effect could not be encoded for the AOF ({exc})", fresh=True)
            if strict and always:
                raise AofUnavailable("an effect could not be encoded") from None
            return False
        try:
            aof.write_out()
        except OSError as exc:
            self.failed(f"Error writing to the AOF file {aof.path}: {exc.strerror or exc}",
                        fresh=bool(getattr(exc, "torn_file", False)))
            if strict and always:
                raise AofUnavailable(self.core.write_error or "AOF write failed") from None
            return False
        if always:
            try:
                os.fdatasync(aof.fd)
            except OSError as exc:
                # the kernel may have dropped the pages it failed to write: only a new base
                # (written and fsynced whole) makes the data safe again
                self.failed(f"fsync of the AOF file {aof.path} failed: {exc.strerror or exc}",
                            fresh=True)
                if strict:
                    raise AofUnavailable(self.core.write_error or "AOF fsync failed") from None
                return False
            aof.unsynced = False
        return True

    # --- failure and recovery ------------------------------------------------------------
    def failed(self, message: str, *, fresh: bool) -> None:
        if not self.write_failing:
            log.error("%s: refusing writes (MISCONF) until the AOF can be written again", message)
        self.failures += 1
        self.write_failing = True
        self.write_status = "err"
        self.core.write_error = message
        if fresh:
            self.need_fresh = True
        self.retry_at = time.monotonic() + 1.0

    def recovered(self) -> None:
        if self.write_failing:
            log.warning("AOF write error looks solved: hotkv can write again")
        self.write_failing = False
        self.need_fresh = False
        self.write_status = "ok"
        self.core.write_error = None

    def tick(self, now: float) -> None:
        """From the cron: a failed fsync thread, write retries, the everysec fsync."""
        error = self.worker.error
        if error is not None:
            self.worker.error = None
            self.failed(error, fresh=True)
        aof = self._aof
        if aof is None:
            return
        if self.write_failing and not self.need_fresh and now >= self.retry_at:
            self.retry_at = now + 1.0
            if self.flush(aof, strict=False):
                self.recovered()
        if not self.write_failing:
            if aof.pending:
                self.flush(aof, strict=False)
            policy = self.core.config.appendfsync
            if (policy == "everysec" and aof.unsynced and self.worker.pending == 0
                    and now - self.last_fsync_request >= 1.0):
                self.worker.fsync(aof.fd)
                aof.unsynced = False
                self.last_fsync_request = now

    # --- switching files ---------------------------------------------------------------
    def replace(self, new: AofFile, *, fsync_old: bool) -> None:
        """Make ``new`` the open increment; the old one is closed by the fsync thread
        (a temp increment of an unfinished fresh rewrite is removed)."""
        old = self._aof
        if old is not None:
            self.worker.close(old.fd, fsync_first=fsync_old)
            if is_temp(old):
                unlink(old.path)
        self.aof = new

    def turn_off(self) -> None:
        """CONFIG SET appendonly no: write what is buffered and close the file."""
        aof = self._aof
        if aof is not None:
            if is_temp(aof):
                self.worker.close(aof.fd, fsync_first=False)
                unlink(aof.path)
            else:
                self.flush(aof, strict=False)
                self.worker.close(aof.fd)
        self.aof = None
        self.aof_on = False
        self.need_fresh = False
        if self.write_failing:
            self.recovered()

    def sync_out(self) -> None:
        """Shutdown: write out what is buffered and fsync it."""
        aof = self._aof
        if aof is not None:
            log.info("Calling fsync() on the AOF file.")
            try:
                aof.write_out()
                os.fdatasync(aof.fd)
            except OSError as exc:
                log.error("Can't flush the AOF on shutdown: %s", exc)
                self.need_fresh = True

    def stop(self) -> None:
        """Shutdown: stop the fsync thread (after its queue) and close the file."""
        self.worker.stop()
        self.worker.drain()
        aof = self._aof
        if aof is not None:
            try:
                os.close(aof.fd)
            except OSError:
                pass
            self.aof = None


def is_temp(aof: AofFile) -> bool:
    """Whether ``aof`` is the temp increment of a fresh rewrite that has not finished."""
    return os.path.basename(aof.path).startswith("temp-")


def unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("Can't remove %s: %s", path, exc)
