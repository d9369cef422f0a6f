"""The data directory's files while the server runs: the manifest, new bases, forked jobs.

``Jobs`` owns the manifest and the numbering of the files, starts the forked child that
writes a new base (BGREWRITEAOF, BGSAVE, automatic rewrites, fresh rewrites after a disk
error), collects it from the cron and installs its base, and writes a base in the
foreground (SAVE, shutdown). A rewrite never leaves the directory unloadable: when it
starts, a new incremental file is created and added to the manifest (old base + old
increments + new increment replay to the same state), and the child writes the state of
the fork instant into a temp file. When the child is done: rename it, fsync the
directory, write the manifest ``[new base, new increment]`` atomically, then delete the
old files. A "fresh" rewrite (the files do not describe the memory) keeps its new
increment a temp file until the base exists.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hotkv_server.persistence import rewrite
from hotkv_server.persistence.aof import AofFile
from hotkv_server.persistence.fsutil import file_size, fsync_dir
from hotkv_server.persistence.manifest import Entry, Layout, Manifest
from hotkv_server.persistence.snapshot import write_base_file
from hotkv_server.persistence.writer import unlink

if TYPE_CHECKING:
    from hotkv_server.engine.core import Core
    from hotkv_server.persistence.writer import AofWriter

log = logging.getLogger("hotkv")

#: waits after a failed background rewrite before an automatic one is tried again (s)
RETRY_MIN_S = 1.0
RETRY_MAX_S = 60.0


class StartFailed(Exception):
    """A rewrite or save could not start; the message says why."""


@dataclass
class RewriteJob:
    pid: int
    read_fd: int
    base_seq: int  # the child writes temp-<base name>
    incr_seq: int  # the increment opened at the fork (0: AOF off)
    started: float  # time.monotonic()
    dirty: int  # core.dirty at the fork
    kind: str  # "rewrite" or "bgsave"
    fresh: bool  # the increment is a temp file until the base exists
    failures: int  # writer.failures at the fork (a recovery only counts if none came later)


class Jobs:
    """The manifest, the file numbering and sizes, the running child and the save stats."""

    def __init__(self, core: Core, layout: Layout, writer: AofWriter) -> None:
        self.core = core
        self.layout = layout
        self.writer = writer
        self.manifest: Manifest | None = None
        self.job: RewriteJob | None = None
        self.next_base_seq = 1
        self.next_incr_seq = 1
        self.base_size = 0
        self.old_incr_size = 0  # incremental files of the manifest before the current one
        self.rewrite_base_size = 0  # AOF size after the last rewrite (automatic rewrite growth)
        self.lastsave = time.time()
        self.last_rewrite_status = "ok"
        self.last_bgsave_status = "ok"
        self.last_rewrite_time_s = -1
        self.rewrites = 0
        self.saves = 0
        self.retry_delay = 0.0

    def aof_current_size(self) -> int:
        aof = self.writer.aof
        return self.base_size + self.old_incr_size + (aof.size if aof is not None else 0)

    def back_off(self) -> None:
        self.retry_delay = min(RETRY_MAX_S, max(RETRY_MIN_S, self.retry_delay * 2))
        self.writer.retry_at = time.monotonic() + self.retry_delay

    def try_start(self, kind: str, why: str, *, fresh: bool = False) -> None:
        try:
            self.start(kind, why, fresh=fresh)
        except StartFailed as exc:
            log.warning("Can't start the background %s: %s", kind, exc)
            self.back_off()

    # --- background rewrite ---------------------------------------------------------------
    def start(self, kind: str, why: str, *, fresh: bool = False) -> None:
        """Switch to a new increment and fork the child writing the base (see module doc)."""
        if self.job is not None:
            raise StartFailed("a background rewrite is already running")
        layout = self.layout
        writer = self.writer
        fresh = writer.aof_on and (fresh or writer.need_fresh)
        old = writer.aof
        new: AofFile | None = None
        incr_seq = 0
        if writer.aof_on:
            incr_seq = self.next_incr_seq
            name = layout.incr_name(incr_seq)
            if fresh:
                # the files on disk do not describe the memory: until the base exists, the
                # new increment is a temp file that no manifest lists
                new = self._open_new_file(layout.temp_name(name), exclusive=False)
            else:
                if old is not None and old.pending and not writer.flush(old, strict=False):
                    raise StartFailed(self.core.write_error or "the AOF can't be written")
                new = self._open_new_file(name, exclusive=True)
                current = self.manifest or Manifest()
                manifest = Manifest(current.base, [*current.incrs, Entry(name, incr_seq, "i")])
                try:
                    layout.write_manifest(manifest)
                except OSError as exc:
                    os.close(new.fd)
                    unlink(new.path)
                    raise StartFailed(f"can't write the manifest: {exc}") from None
                self.manifest = manifest
                if old is not None:
                    self.old_incr_size += old.size
            self.next_incr_seq += 1
        base_seq = self.next_base_seq
        self.next_base_seq += 1
        temp_base = layout.temp_name(layout.base_name(base_seq))
        error: str | None = None
        try:
            pid, read_fd = rewrite.spawn(self.core.db, layout.path(temp_base), self.core.clock.now_ms())
        except OSError as exc:
            error = f"fork failed: {exc.strerror or exc}"
        if new is not None:
            if error is not None and fresh:
                os.close(new.fd)
                unlink(new.path)
            else:
                # the records before this instant are in the old file (or, fresh, in the base)
                writer.replace(new, fsync_old=not fresh)
        if error is not None:
            raise StartFailed(error)
        self.job = RewriteJob(pid, read_fd, base_seq, incr_seq, time.monotonic(), self.core.dirty,
                              kind, fresh, writer.failures)
        log.info("%s", why)
        log.info("Background %s started by pid %d",
                 "saving" if kind == "bgsave" else "append only file rewriting", pid)

    def _open_new_file(self, name: str, *, exclusive: bool) -> AofFile:
        try:
            new = AofFile.open(self.layout.path(name), create=True, exclusive=exclusive)
        except OSError as exc:
            raise StartFailed(f"can't create {name}: {exc.strerror or exc}") from None
        try:
            fsync_dir(self.layout.aof_dir)
        except OSError as exc:
            os.close(new.fd)
            unlink(new.path)
            raise StartFailed(f"can't fsync {self.layout.aof_dir}: {exc.strerror or exc}") from None
        return new

    def reap(self) -> None:
        """From the cron: collect a finished child and install its base (or count its error)."""
        job = self.job
        if job is None:
            return
        result = rewrite.collect(job.pid, job.read_fd)
        if result is None:
            return
        self.job = None
        if result.ok:
            try:
                self._finish(job)
                return
            except OSError as exc:
                message = f"can't install the new base: {exc}"
        else:
            message = result.message
        self._drop_temp_base(job)
        log.warning("Background %s terminated with error: %s",
                    "saving" if job.kind == "bgsave" else "AOF rewrite", message)
        if job.kind == "bgsave":
            self.last_bgsave_status = "err"
        self.last_rewrite_status = "err"
        if job.fresh:
            self.writer.need_fresh = True
        self.back_off()

    def _finish(self, job: RewriteJob) -> None:
        layout = self.layout
        writer = self.writer
        base = Entry(layout.base_name(job.base_seq), job.base_seq, "b")
        renames = [(layout.path(layout.temp_name(base.name)), layout.path(base.name))]
        incrs: list[Entry] = []
        aof = writer.aof
        if writer.aof_on and aof is not None:
            entry = Entry(layout.incr_name(job.incr_seq), job.incr_seq, "i")
            if job.fresh:
                renames.append((aof.path, layout.path(entry.name)))
            incrs.append(entry)
        self._install(Manifest(base, incrs), renames)
        if job.fresh and aof is not None:
            aof.path = layout.path(incrs[0].name)
        elapsed = time.monotonic() - job.started
        self.last_rewrite_time_s = int(elapsed)
        self.last_rewrite_status = "ok"
        if job.kind == "bgsave":
            self.last_bgsave_status = "ok"
            self.saves += 1
        self.rewrites += 1
        self.retry_delay = 0.0
        self.lastsave = time.time()
        self.core.dirty = max(0, self.core.dirty - job.dirty)
        if job.fresh and writer.failures == job.failures:
            writer.recovered()
        log.info("Background %s finished successfully (%d bytes in %.3f s)",
                 "saving" if job.kind == "bgsave" else "AOF rewrite", self.base_size, elapsed)

    def _install(self, manifest: Manifest, renames: list[tuple[str, str]]) -> None:
        """Make ``manifest`` (whose files are still temp files, see ``renames``) the data.

        Manifest first, renames after: a crash in between leaves a manifest naming files
        that exist as ``temp-<name>``, which startup renames. The replaced files are listed
        as history until they are deleted.
        """
        layout = self.layout
        old = self.manifest
        kept = {e.name for e in manifest.entries()}
        manifest.history = [e for e in (old.entries() if old else []) if e.name not in kept]
        layout.write_manifest(manifest)
        self.manifest = manifest
        for source, target in renames:
            os.replace(source, target)
        fsync_dir(layout.aof_dir)
        if manifest.history:
            for entry in manifest.history:
                unlink(layout.path(entry.name))
            manifest.history = []
            try:
                layout.write_manifest(manifest)
            except OSError as exc:  # harmless: the next start drops the history entries
                log.warning("Can't rewrite the manifest without its history: %s", exc)
        self.base_size = file_size(layout.path(manifest.base.name)) if manifest.base else 0
        self.old_incr_size = 0
        self.rewrite_base_size = self.aof_current_size()

    def kill(self) -> None:
        """Stop a running child and drop its unfinished base."""
        job = self.job
        if job is None:
            return
        self.job = None
        rewrite.kill(job.pid, job.read_fd)
        self._drop_temp_base(job)
        log.info("Killed the background %s child %d", job.kind, job.pid)

    def _drop_temp_base(self, job: RewriteJob) -> None:
        layout = self.layout
        unlink(layout.path(layout.temp_name(layout.base_name(job.base_seq))))

    # --- foreground save ------------------------------------------------------------------
    def save_foreground(self) -> None:
        """SAVE: write a new base of the current state and start a new, empty increment."""
        layout = self.layout
        core = self.core
        writer = self.writer
        started = time.monotonic()
        seq = self.next_base_seq
        base = Entry(layout.base_name(seq), seq, "b")
        temp = layout.path(layout.temp_name(base.name))
        try:
            write_base_file(temp, core.db.snapshot(), core.clock.now_ms())
        except BaseException:
            unlink(temp)
            raise
        self.next_base_seq += 1
        new: AofFile | None = None
        incrs: list[Entry] = []
        try:
            if writer.aof_on:
                iseq = self.next_incr_seq
                name = layout.incr_name(iseq)
                new = AofFile.open(layout.path(name), create=True, exclusive=True)
                self.next_incr_seq += 1
                incrs.append(Entry(name, iseq, "i"))
                fsync_dir(layout.aof_dir)
            self._install(Manifest(base, incrs), [(temp, layout.path(base.name))])
        except BaseException:
            if new is not None:
                os.close(new.fd)
                unlink(new.path)
            unlink(temp)
            raise
        if new is not None:
            writer.replace(new, fsync_old=False)  # the old increment is replaced by the base
            self.rewrite_base_size = self.aof_current_size()
        self.lastsave = time.time()
        self.saves += 1
        self.last_bgsave_status = "ok"
        core.dirty = 0
        if writer.write_failing or writer.need_fresh:
            writer.recovered()
        log.info("DB saved on disk (%d bytes in %.3f s)", self.base_size, time.monotonic() - started)
