"""The persistence subsystem of a running server: AOF writing, fsync, rewrites, SAVE, load.

Life cycle (see ``hotkv_server.server.app``): ``attach()`` checks the directory and sets
``core.loading``; ``started()`` loads the data while the server already answers
``-LOADING``, then opens the AOF; ``tick()`` runs from the server's cron (everysec fsync,
retries after a disk error, finished rewrites, automatic rewrites); ``close(save)`` flushes
and fsyncs on shutdown.

Durability rules kept here:

* Every effect record reaches the file with ``write(2)`` before the replies of its batch
  leave; under ``appendfsync always`` also ``fdatasync``. If either fails under
  ``always``, the replies of that batch are never sent (the connection is dropped) and
  ``core.write_error`` makes the dispatch point answer ``MISCONF`` to writes until the
  problem is solved: a later write succeeds, or (when the file may now hold a partial
  record, or an fsync failed and the kernel may have dropped pages) a rewrite has put the
  whole state into a new base.
* A rewrite never leaves the directory unloadable. When it starts, a new incremental file
  is created and added to the manifest (old base + old increments + new increment replay
  to the same state), and the child writes the state of the fork instant into a temp file.
  When the child is done: rename it, fsync the directory, write the manifest ``[new base,
  new increment]`` atomically, then delete the old files.
* When the AOF is switched on at run time (or must be rebuilt after a disk error) the
  files on disk do not describe the memory, so the new increment is a temp file until the
  new base exists ("fresh" rewrite), as Redis 7 does.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hotkv_server.engine.errors import RequestRefused, StartupError
from hotkv_server.engine.turn import RepliesWithheld
from hotkv_server.persistence import rewrite
from hotkv_server.persistence.aof import AofFile, FsyncWorker
from hotkv_server.persistence.fsutil import file_size, fsync_dir
from hotkv_server.persistence.loader import (
    Loader,
    LoadError,
    LoadStats,
    manifest_hint,
    read_checked_manifest,
)
from hotkv_server.persistence.manifest import Entry, Layout, Manifest, ManifestError
from hotkv_server.persistence.snapshot import write_base_file
from hotkv_server.stores.effect import TX

if TYPE_CHECKING:
    from hotkv_server.engine.core import Host
    from hotkv_server.stores.effect import Effect

log = logging.getLogger("hotkv")

REWRITE_IN_PROGRESS = "ERR Background append only file rewriting already in progress"
SAVE_IN_PROGRESS = "ERR Background save already in progress"
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
    failures: int  # self.failures at the fork (a recovery only counts if none came later)


class Persistence:
    """One server's persistence; ``core.extras["persistence"]`` (SAVE, BGREWRITEAOF ...)."""

    def __init__(self, server: Host) -> None:
        self.server = server
        core = self.core = server.core
        cfg = core.config.values
        self.layout = Layout(cfg["dir"], cfg["appendfilename"])
        self.aof_on = bool(cfg["appendonly"])
        self.manifest: Manifest | None = None
        self._aof: AofFile | None = None
        self.worker = FsyncWorker()
        self.job: RewriteJob | None = None
        self.ready = False
        self.closed = False
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
        self.write_status = "ok"
        self.write_failing = False  # the buffer could not be written: retried from tick
        self.lost_in_turn = False  # records of this turn could not be encoded
        self.need_fresh = False  # the files do not cover the memory: a fresh rewrite must run
        self.failures = 0
        self.retry_at = 0.0
        self.retry_delay = 0.0
        self.last_fsync_request = time.monotonic()
        self.loader: Loader | None = None
        self.loading_started = 0.0
        self.load_stats: LoadStats | None = None

    # --- attach / load ----------------------------------------------------------------
    def prepare(self) -> None:
        """Check the directory and the manifest before the server listens."""
        layout = self.layout
        try:
            os.makedirs(layout.aof_dir, exist_ok=True)
        except OSError as exc:
            raise StartupError(f"Can't create the data directory {layout.aof_dir}: {exc.strerror}") from None
        try:
            self.manifest = self._recover_directory()
        except (LoadError, ManifestError) as exc:
            raise StartupError(str(exc)) from None
        except OSError as exc:
            raise StartupError(f"Can't read the data directory {layout.aof_dir}: {exc}") from None
        core = self.core
        core.loading = True
        # the sink is listed while an AOF is open (the ``aof`` property)
        core.turn.durable.append(self._before_reply)
        core.info_sections["persistence"] = self.info
        core.extras["persistence"] = self
        core.extras.setdefault("config_listeners", []).append(self._config_changed)

    def _recover_directory(self) -> Manifest | None:
        """Finish or undo what a crash interrupted, and refuse what only damage explains."""
        layout = self.layout
        hint = manifest_hint(layout)
        try:
            manifest = layout.read_manifest()
        except ManifestError as exc:
            raise LoadError(f"{exc}; {hint}") from None
        for entry in manifest.entries() if manifest else []:
            path = layout.path(entry.name)
            temp = layout.path(layout.temp_name(entry.name))
            if not os.path.exists(path) and os.path.exists(temp):
                # the manifest was written, the rename that follows it was not
                os.replace(temp, path)
                fsync_dir(layout.aof_dir)
                log.warning("Completed an interrupted rewrite: renamed %s to %s", temp, path)
        for name in layout.temp_files():
            log.warning("Removing %s, left by an interrupted rewrite or save", layout.path(name))
            os.unlink(layout.path(name))
        manifest = read_checked_manifest(layout)
        if manifest is not None and manifest.history:
            for entry in manifest.history:
                if os.path.exists(layout.path(entry.name)):
                    log.info("Removing %s, replaced by the last rewrite", layout.path(entry.name))
                    os.unlink(layout.path(entry.name))
            manifest.history = []
            layout.write_manifest(manifest)
        referenced = {e.name for e in manifest.entries()} if manifest else set()
        files = layout.data_files()
        kept = []
        for entry in files:
            if entry.name in referenced:
                kept.append(entry)
                continue
            path = layout.path(entry.name)
            if file_size(path) > 0:
                what = ("no manifest lists it" if manifest is None
                        else f"{layout.manifest_path} does not list it")
                raise LoadError(f"{path} holds data but {what}: a manifest entry is missing; {hint}")
            log.warning("Removing %s: an empty file no manifest lists", path)
            os.unlink(path)
        # the next files continue the manifest's numbering: a removed file's number is
        # free again (skipping it would leave a gap the manifest check refuses)
        for entry in kept + (manifest.entries() if manifest else []):
            if entry.kind == "b":
                self.next_base_seq = max(self.next_base_seq, entry.seq + 1)
            else:
                self.next_incr_seq = max(self.next_incr_seq, entry.seq + 1)
        return manifest

    async def started(self) -> None:
        """Load the data (answering -LOADING meanwhile), then open the AOF."""
        core = self.core
        loader = self.loader = Loader(
            self.layout,
            self.manifest,
            core.db,
            truncate_torn_tail=bool(core.config.values["aof-load-truncated"]),
            now_ms=core.clock.now_ms,
            apply=core.effects.replay,
        )
        self.loading_started = time.time()
        try:
            for _ in loader.run():
                await asyncio.sleep(0)
        except LoadError as exc:
            raise StartupError(str(exc)) from None
        stats = self.load_stats = loader.stats
        if self.manifest is not None:
            log.info(
                "DB loaded from %s: %d records replayed after the base in %.3f seconds "
                "(%d expired entries dropped)",
                self.layout.aof_dir, stats.records, stats.seconds, stats.purged,
            )
        self.base_size = stats.base_size
        self.old_incr_size = sum(stats.incr_sizes[:-1])
        self.rewrite_base_size = stats.base_size + sum(stats.incr_sizes)
        core.dirty = 0
        try:
            if self.aof_on:
                self._open_aof_after_load()
        except OSError as exc:
            raise StartupError(f"Can't open the append only file: {exc}") from None
        self.worker.start()
        self.ready = True
        core.loading = False
        self.loader = None

    def _open_aof_after_load(self) -> None:
        layout = self.layout
        manifest = self.manifest or Manifest()
        if manifest.incrs:
            self.aof = AofFile.open(layout.path(manifest.incrs[-1].name), create=False)
            return
        seq = self.next_incr_seq
        name = layout.incr_name(seq)
        self.aof = AofFile.open(layout.path(name), create=True, exclusive=True)
        self.next_incr_seq += 1
        fsync_dir(layout.aof_dir)
        new = Manifest(manifest.base, [Entry(name, seq, "i")])
        layout.write_manifest(new)
        self.manifest = new
        log.info("Creating AOF incr file %s on server start", name)

    # --- the write path ------------------------------------------------------------------
    @property
    def aof(self) -> AofFile | None:
        """The open incremental AOF file, None with ``appendonly no`` (or not yet open)."""
        return self._aof

    @aof.setter
    def aof(self, aof: AofFile | None) -> None:
        self._aof = aof
        self.core.effects.set_sink(self, aof is not None)

    #: effect sink: the AOF packs its turn's units itself, in one call (``AofFile.encode``)
    wants_bytes = False

    def write_effects(self, records: list[Effect], payload: bytes | None) -> None:
        """Effect sink: one unit of records, framed with the rest of the turn's in _flush."""
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
        self._failed(reason, fresh=True)
        self.lost_in_turn = True
        self.core.turn.barrier = True

    def _before_reply(self) -> None:
        """The turn's durable work: write the turn's records (fsync under always)."""
        if self.lost_in_turn:
            self.lost_in_turn = False
            if self.core.config.values["appendfsync"] == "always":
                raise AofUnavailable("an effect could not be encoded")
        aof = self.aof
        if aof is None or not aof.pending or self.write_failing:
            return
        self._flush(aof, strict=True)

    def _flush(self, aof: AofFile, *, strict: bool) -> bool:
        """Write the buffer (and fdatasync under always); False on failure.

        ``strict`` (a batch of replies is waiting): under ``always`` a failure raises, so
        that the replies which would acknowledge unsaved writes are never sent.
        """
        always = self.core.config.values["appendfsync"] == "always"
        try:
            aof.encode()
        except Exception as exc:  # a store bug: an effect msgpack cannot encode
            log.exception("Can't encode an effect for the AOF")
            self._failed(f"an effect could not be encoded for the AOF ({exc})", fresh=True)
            if strict and always:
                raise AofUnavailable("an effect could not be encoded") from None
            return False
        try:
            aof.write_out()
        except OSError as exc:
            self._failed(f"Error writing to the AOF file {aof.path}: {exc.strerror or exc}",
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
                self._failed(f"fsync of the AOF file {aof.path} failed: {exc.strerror or exc}",
                             fresh=True)
                if strict:
                    raise AofUnavailable(self.core.write_error or "AOF fsync failed") from None
                return False
            aof.unsynced = False
        return True

    def _failed(self, message: str, *, fresh: bool) -> None:
        if not self.write_failing:
            log.error("%s: refusing writes (MISCONF) until the AOF can be written again", message)
        self.failures += 1
        self.write_failing = True
        self.write_status = "err"
        self.core.write_error = message
        if fresh:
            self.need_fresh = True
        self.retry_at = time.monotonic() + 1.0

    def _recovered(self) -> None:
        if self.write_failing:
            log.warning("AOF write error looks solved: hotkv can write again")
        self.write_failing = False
        self.need_fresh = False
        self.write_status = "ok"
        self.core.write_error = None

    # --- cron -----------------------------------------------------------------------
    def tick(self) -> None:
        if not self.ready or self.closed:
            return
        now = time.monotonic()
        self._reap()
        error = self.worker.error
        if error is not None:
            self.worker.error = None
            self._failed(error, fresh=True)
        aof = self.aof
        if aof is not None:
            if self.write_failing and not self.need_fresh and now >= self.retry_at:
                self.retry_at = now + 1.0
                if self._flush(aof, strict=False):
                    self._recovered()
            if not self.write_failing:
                if aof.pending:
                    self._flush(aof, strict=False)
                policy = self.core.config.values["appendfsync"]
                if (policy == "everysec" and aof.unsynced and self.worker.pending == 0
                        and now - self.last_fsync_request >= 1.0):
                    self.worker.fsync(aof.fd)
                    aof.unsynced = False
                    self.last_fsync_request = now
            if self.need_fresh:
                if self.job is None and now >= self.retry_at:
                    self._try_start("rewrite", "Rebuilding the AOF from memory", fresh=True)
            elif not self.write_failing:
                self._maybe_auto_rewrite(now)
        self._maybe_save_point(now)

    def _maybe_auto_rewrite(self, now: float) -> None:
        cfg = self.core.config.values
        percentage = cfg["auto-aof-rewrite-percentage"]
        if not percentage or self.job is not None or now < self.retry_at:
            return
        current = self.aof_current_size()
        if current < cfg["auto-aof-rewrite-min-size"]:
            return
        base = self.rewrite_base_size or 1
        growth = current * 100 // base - 100
        if growth >= percentage:
            self._try_start("rewrite", f"Starting automatic rewriting of AOF on {growth}% growth")

    def _maybe_save_point(self, now: float) -> None:
        params = self.core.config.values["save"].split()
        if not params or self.job is not None or now < self.retry_at or len(params) % 2:
            return
        elapsed = time.time() - self.lastsave
        for i in range(0, len(params), 2):
            try:
                seconds, changes = int(params[i]), int(params[i + 1])
            except ValueError:
                return
            if self.core.dirty >= changes and elapsed > seconds:
                self._try_start("bgsave", f"{changes} changes in {seconds} seconds. Saving...")
                return

    def _try_start(self, kind: str, why: str, *, fresh: bool = False) -> None:
        try:
            self._start_background(kind, why, fresh=fresh)
        except StartFailed as exc:
            log.warning("Can't start the background %s: %s", kind, exc)
            self._back_off()

    def _back_off(self) -> None:
        self.retry_delay = min(RETRY_MAX_S, max(RETRY_MIN_S, self.retry_delay * 2))
        self.retry_at = time.monotonic() + self.retry_delay

    # --- background rewrite ---------------------------------------------------------------
    def _start_background(self, kind: str, why: str, *, fresh: bool = False) -> None:
        """Switch to a new increment and fork the child writing the base (see module doc)."""
        if self.job is not None:
            raise StartFailed("a background rewrite is already running")
        layout = self.layout
        fresh = self.aof_on and (fresh or self.need_fresh)
        old = self.aof
        new: AofFile | None = None
        incr_seq = 0
        if self.aof_on:
            incr_seq = self.next_incr_seq
            name = layout.incr_name(incr_seq)
            if fresh:
                # the files on disk do not describe the memory: until the base exists, the
                # new increment is a temp file that no manifest lists
                new = self._open_new_file(layout.temp_name(name), exclusive=False)
            else:
                if old is not None and old.pending and not self._flush(old, strict=False):
                    raise StartFailed(self.core.write_error or "the AOF can't be written")
                new = self._open_new_file(name, exclusive=True)
                current = self.manifest or Manifest()
                manifest = Manifest(current.base, [*current.incrs, Entry(name, incr_seq, "i")])
                try:
                    layout.write_manifest(manifest)
                except OSError as exc:
                    os.close(new.fd)
                    _unlink(new.path)
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
                _unlink(new.path)
            else:
                # the records before this instant are in the old file (or, fresh, in the base)
                if old is not None:
                    self.worker.close(old.fd, fsync_first=not fresh)
                    if self._is_temp(old):
                        _unlink(old.path)  # the increment of an earlier fresh attempt
                self.aof = new
        if error is not None:
            raise StartFailed(error)
        self.job = RewriteJob(pid, read_fd, base_seq, incr_seq, time.monotonic(), self.core.dirty,
                              kind, fresh, self.failures)
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
            _unlink(new.path)
            raise StartFailed(f"can't fsync {self.layout.aof_dir}: {exc.strerror or exc}") from None
        return new

    def _reap(self) -> None:
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
            self.need_fresh = True
        self._back_off()

    def _finish(self, job: RewriteJob) -> None:
        layout = self.layout
        base = Entry(layout.base_name(job.base_seq), job.base_seq, "b")
        renames = [(layout.path(layout.temp_name(base.name)), layout.path(base.name))]
        incrs: list[Entry] = []
        aof = self.aof
        if self.aof_on and aof is not None:
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
        if job.fresh and self.failures == job.failures:
            self._recovered()
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
                _unlink(layout.path(entry.name))
            manifest.history = []
            try:
                layout.write_manifest(manifest)
            except OSError as exc:  # harmless: the next start drops the history entries
                log.warning("Can't rewrite the manifest without its history: %s", exc)
        self.base_size = file_size(layout.path(manifest.base.name)) if manifest.base else 0
        self.old_incr_size = 0
        self.rewrite_base_size = self.aof_current_size()

    def _kill_job(self) -> None:
        job = self.job
        if job is None:
            return
        self.job = None
        rewrite.kill(job.pid, job.read_fd)
        self._drop_temp_base(job)
        log.info("Killed the background %s child %d", job.kind, job.pid)

    def _drop_temp_base(self, job: RewriteJob) -> None:
        layout = self.layout
        _unlink(layout.path(layout.temp_name(layout.base_name(job.base_seq))))

    # --- foreground save ------------------------------------------------------------------
    def _save_foreground(self) -> None:
        """SAVE: write a new base of the current state and start a new, empty increment."""
        layout = self.layout
        core = self.core
        started = time.monotonic()
        seq = self.next_base_seq
        base = Entry(layout.base_name(seq), seq, "b")
        temp = layout.path(layout.temp_name(base.name))
        try:
            write_base_file(temp, core.db.snapshot(), core.clock.now_ms())
        except BaseException:
            _unlink(temp)
            raise
        self.next_base_seq += 1
        new: AofFile | None = None
        incrs: list[Entry] = []
        try:
            if self.aof_on:
                iseq = self.next_incr_seq
                name = layout.incr_name(iseq)
                new = AofFile.open(layout.path(name), create=True, exclusive=True)
                self.next_incr_seq += 1
                incrs.append(Entry(name, iseq, "i"))
                fsync_dir(layout.aof_dir)
            old = self.aof
            self._install(Manifest(base, incrs), [(temp, layout.path(base.name))])
        except BaseException:
            if new is not None:
                os.close(new.fd)
                _unlink(new.path)
            _unlink(temp)
            raise
        if new is not None:
            if old is not None:
                self.worker.close(old.fd, fsync_first=False)  # replaced by the base: history
                if self._is_temp(old):
                    _unlink(old.path)  # the increment of an unfinished fresh rewrite
            self.aof = new
            self.rewrite_base_size = self.aof_current_size()
        self.lastsave = time.time()
        self.saves += 1
        self.last_bgsave_status = "ok"
        core.dirty = 0
        if self.write_failing or self.need_fresh:
            self._recovered()
        log.info("DB saved on disk (%d bytes in %.3f s)", self.base_size, time.monotonic() - started)

    # --- commands (core.extras["persistence"]) -----------------------------------------------
    def save(self) -> str:
        if self.job is not None:
            raise RequestRefused(SAVE_IN_PROGRESS)
        try:
            self._save_foreground()
        except OSError as exc:
            log.error("SAVE failed: %s", exc)
            self.last_bgsave_status = "err"
            raise RequestRefused(f"ERR SAVE failed: {exc.strerror or exc}") from None
        return "OK"

    def bgsave(self) -> str:
        if self.job is not None:
            raise RequestRefused(SAVE_IN_PROGRESS)
        self._start_or_error("bgsave", "Background saving requested by a client")
        return "Background saving started"

    def bgrewrite(self) -> str:
        if self.job is not None:
            raise RequestRefused(REWRITE_IN_PROGRESS)
        self._start_or_error("rewrite", "Background append only file rewriting requested by a client")
        return "Background append only file rewriting started"

    def _start_or_error(self, kind: str, why: str) -> None:
        try:
            self._start_background(kind, why)
        except StartFailed as exc:
            raise RequestRefused(f"ERR Can't start the background {'save' if kind == 'bgsave' else 'rewrite'}: {exc}") from None

    def dataset_replaced(self) -> None:
        """The whole dataset was replaced without effects (a replica's full resync).

        The files on disk no longer lead to the memory, so a fresh rewrite starts (retried
        from the cron if it cannot start now); until it finishes, what is on disk is the
        state before the replacement.
        """
        if not self.aof_on:
            return
        self._kill_job()
        self.need_fresh = True
        self.retry_at = 0.0
        self._try_start("rewrite", "Dataset replaced: writing a new base", fresh=True)

    # --- CONFIG SET appendonly ---------------------------------------------------------------
    def _config_changed(self, name: str, value: Any) -> None:
        if name != "appendonly" or bool(value) == self.aof_on:
            return
        if not self.ready:
            self.aof_on = bool(value)  # started() opens the AOF, if on, once loading is over
            return
        if value:
            self._kill_job()
            self.aof_on = True
            try:
                self._start_background("rewrite", "AOF switched on: writing the initial base", fresh=True)
            except StartFailed as exc:
                self.aof_on = False
                raise ValueError(f"can't start the AOF: {exc}") from None
        else:
            self._turn_off()

    def _is_temp(self, aof: AofFile) -> bool:
        """Whether ``aof`` is the temp increment of a fresh rewrite that has not finished."""
        return os.path.basename(aof.path).startswith("temp-")

    def _turn_off(self) -> None:
        self._kill_job()
        aof = self.aof
        if aof is not None:
            if self._is_temp(aof):
                self.worker.close(aof.fd, fsync_first=False)
                _unlink(aof.path)
            else:
                self._flush(aof, strict=False)
                self.worker.close(aof.fd)
        self.aof = None
        self.aof_on = False
        self.need_fresh = False
        if self.write_failing:
            self._recovered()
        log.info("AOF switched off")

    # --- shutdown -------------------------------------------------------------------
    def close(self, save: bool | None = None) -> None:
        """SHUTDOWN and SIGTERM: stop any child, flush and fsync, save if asked."""
        if self.closed:
            return
        self.closed = True
        self._kill_job()
        if not self.ready:
            self.worker.stop()
            return
        aof = self.aof
        fresh_unfinished = aof is not None and self._is_temp(aof)
        if aof is not None and not self.need_fresh and not fresh_unfinished:
            log.info("Calling fsync() on the AOF file.")
            try:
                aof.write_out()
                os.fdatasync(aof.fd)
            except OSError as exc:
                log.error("Can't flush the AOF on shutdown: %s", exc)
                self.need_fresh = True
        points = bool(self.core.config.values["save"].split())
        must = self.aof_on and (self.need_fresh or fresh_unfinished)
        if save is True or (save is None and (points or must)):
            log.info("Saving the final snapshot before exiting.")
            try:
                self._save_foreground()
            except OSError as exc:
                log.error("Error trying to save the DB, can't exit cleanly: %s", exc)
        self.worker.stop()
        self.worker.drain()
        if self.aof is not None:
            try:
                os.close(self.aof.fd)
            except OSError:
                pass
            self.aof = None

    # --- INFO persistence -------------------------------------------------------------
    def aof_current_size(self) -> int:
        aof = self.aof
        return self.base_size + self.old_incr_size + (aof.size if aof is not None else 0)

    def info(self) -> list[tuple[str, Any]]:
        core = self.core
        job = self.job
        now = time.monotonic()
        aof = self.aof
        fields: list[tuple[str, Any]] = [
            ("loading", int(core.loading)),
            ("async_loading", 0),
            ("rdb_changes_since_last_save", core.dirty),
            ("rdb_bgsave_in_progress", int(job is not None and job.kind == "bgsave")),
            ("rdb_last_save_time", int(self.lastsave)),
            ("rdb_last_bgsave_status", self.last_bgsave_status),
            ("rdb_saves", self.saves),
            ("aof_enabled", int(self.aof_on)),
            ("aof_rewrite_in_progress", int(job is not None)),
            ("aof_rewrite_scheduled", int(self.need_fresh and job is None)),
            ("aof_last_rewrite_time_sec", self.last_rewrite_time_s),
            ("aof_current_rewrite_time_sec", int(now - job.started) if job is not None else -1),
            ("aof_last_bgrewrite_status", self.last_rewrite_status),
            ("aof_last_rewrite_status", self.last_rewrite_status),
            ("aof_rewrites", self.rewrites),
            ("aof_last_write_status", self.write_status),
            ("aof_current_size", self.aof_current_size()),
            ("aof_base_size", self.base_size),
            ("aof_buffer_length", len(aof.buf) if aof is not None else 0),
            ("aof_pending_bio_fsync", self.worker.pending),
            ("aof_fsync_policy", core.config.values["appendfsync"]),
            ("aof_dir", self.layout.aof_dir),
        ]
        loader = self.loader
        if core.loading and loader is not None:
            st = loader.stats
            total = max(st.total_bytes, 1)
            elapsed = max(time.time() - self.loading_started, 1e-6)
            rate = st.loaded_bytes / elapsed
            eta = int((st.total_bytes - st.loaded_bytes) / rate) if rate > 0 else 1
            fields += [
                ("loading_start_time", int(self.loading_started)),
                ("loading_total_bytes", st.total_bytes),
                ("loading_loaded_bytes", st.loaded_bytes),
                ("loading_loaded_perc", f"{100.0 * st.loaded_bytes / total:.2f}"),
                ("loading_eta_seconds", eta),
            ]
        return fields


class AofUnavailable(RepliesWithheld, OSError):
    """Raised before replies that would acknowledge writes the AOF could not keep."""


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("Can't remove %s: %s", path, exc)
