"""The persistence subsystem of a running server: the facade the server and commands call.

Life cycle (see ``hotkv_server.server.app``): ``prepare()`` checks the directory and sets
``core.loading``; ``started()`` loads the data while the server already answers
``-LOADING``, then opens the AOF; ``tick()`` runs from the server's cron (everysec fsync,
retries after a disk error, finished rewrites, automatic rewrites and save points);
``close(save)`` flushes and fsyncs on shutdown. SAVE, BGSAVE, BGREWRITEAOF, CONFIG SET
appendonly and a replica's full resync come in here.

The work is done by two parts beside this file:

* ``writer.AofWriter``, the write path: every effect record reaches the file with
  ``write(2)`` before the replies of its batch leave; under ``appendfsync always`` also
  ``fdatasync``. If either fails under ``always``, the replies of that batch are never sent
  (the connection is dropped) and ``core.write_error`` makes the dispatch point answer
  ``MISCONF`` to writes until the problem is solved: a later write succeeds, or (when the
  file may now hold a partial record, or an fsync failed and the kernel may have dropped
  pages) a rewrite has put the whole state into a new base.
* ``jobs.Jobs``, the files: the manifest, the forked child writing a new base, SAVE. A
  rewrite never leaves the directory unloadable (see its module). When the AOF is switched
  on at run time (or must be rebuilt after a disk error) the files on disk do not describe
  the memory, so the new increment is a temp file until the new base exists ("fresh"
  rewrite), as Redis 7 does.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import TYPE_CHECKING, Any

from hotkv_server.engine.core import InfoSection, Subsystem
from hotkv_server.engine.deferred import Deferred
from hotkv_server.engine.errors import RequestRefused, StartupError
from hotkv_server.engine.replies import ErrorReply, Simple
from hotkv_server.persistence.aof import AofFile
from hotkv_server.persistence.fsutil import file_size, fsync_dir
from hotkv_server.persistence.jobs import Jobs, StartFailed
from hotkv_server.persistence.loader import (
    Loader,
    LoadError,
    LoadStats,
    manifest_hint,
    read_checked_manifest,
)
from hotkv_server.persistence.manifest import Entry, Layout, Manifest, ManifestError
from hotkv_server.persistence.writer import AofUnavailable, AofWriter, is_temp

if TYPE_CHECKING:
    from hotkv_server.engine.core import Host

__all__ = ["AofUnavailable", "Persistence"]

log = logging.getLogger("hotkv")

REWRITE_IN_PROGRESS = "ERR Background append only file rewriting already in progress"
SAVE_IN_PROGRESS = "ERR Background save already in progress"


def start_error(kind: str, reason: str) -> str:
    """A client's failed BGREWRITEAOF or BGSAVE: Redis 7's reply to a rewrite that cannot
    start (the reason is in the log, as Redis's); a save says why."""
    if kind == "bgsave":
        return f"ERR Can't start the background save: {reason}"
    return "ERR Can't execute an AOF background rewriting. Please check the server logs for more information."


class Persistence(Subsystem):
    """One server's persistence; ``core.persistence`` (SAVE, BGREWRITEAOF ...)."""

    def __init__(self, server: Host) -> None:
        self.server = server
        core = self.core = server.core
        config = core.config
        self.layout = Layout(config.dir, config.appendfilename)
        self.writer = AofWriter(core, config.appendonly)
        self.jobs = Jobs(core, self.layout, self.writer)
        self.ready = False
        self.closed = False
        self.loader: Loader | None = None
        self.loading_started = 0.0
        self.load_stats: LoadStats | None = None

    @property
    def aof(self) -> AofFile | None:
        """The open incremental AOF file, None with ``appendonly no`` (or not yet open)."""
        return self.writer.aof

    @property
    def aof_on(self) -> bool:
        """``appendonly yes`` (the file opens once loading is over)."""
        return self.writer.aof_on

    @property
    def lastsave(self) -> float:
        """Unix time of the last successful save (LASTSAVE, INFO)."""
        return self.jobs.lastsave

    # --- attach / load ----------------------------------------------------------------
    def prepare(self) -> None:
        """Check the directory and the manifest before the server listens."""
        layout = self.layout
        try:
            os.makedirs(layout.aof_dir, exist_ok=True)
        except OSError as exc:
            raise StartupError(f"Can't create the data directory {layout.aof_dir}: {exc.strerror}") from None
        try:
            self.jobs.manifest = self._recover_directory()
        except (LoadError, ManifestError) as exc:
            raise StartupError(str(exc)) from None
        except OSError as exc:
            raise StartupError(f"Can't read the data directory {layout.aof_dir}: {exc}") from None
        core = self.core
        core.loading = True
        # the sink is listed while an AOF is open (the ``aof`` property)
        core.turn.durable.append(self.writer.before_reply)
        core.persistence = self
        core.attach(self)

    def info_sections(self) -> dict[str, InfoSection]:
        return {"persistence": self.info}

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
        jobs = self.jobs
        for entry in kept + (manifest.entries() if manifest else []):
            if entry.kind == "b":
                jobs.next_base_seq = max(jobs.next_base_seq, entry.seq + 1)
            else:
                jobs.next_incr_seq = max(jobs.next_incr_seq, entry.seq + 1)
        return manifest

    async def started(self) -> None:
        """Load the data (answering -LOADING meanwhile), then open the AOF."""
        core = self.core
        loader = self.loader = Loader(
            self.layout,
            self.jobs.manifest,
            core.db,
            truncate_torn_tail=core.config.aof_load_truncated,
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
        jobs = self.jobs
        if jobs.manifest is not None:
            log.info(
                "DB loaded from %s: %d records replayed after the base in %.3f seconds "
                "(%d expired entries dropped)",
                self.layout.aof_dir, stats.records, stats.seconds, stats.purged,
            )
        jobs.base_size = stats.base_size
        jobs.old_incr_size = sum(stats.incr_sizes[:-1])
        jobs.rewrite_base_size = stats.base_size + sum(stats.incr_sizes)
        core.dirty = 0
        try:
            if self.writer.aof_on:
                self._open_aof_after_load()
        except OSError as exc:
            raise StartupError(f"Can't open the append only file: {exc}") from None
        self.writer.worker.start()
        self.ready = True
        core.loading = False
        self.loader = None

    def _open_aof_after_load(self) -> None:
        layout = self.layout
        jobs = self.jobs
        manifest = jobs.manifest or Manifest()
        if manifest.incrs:
            self.writer.aof = AofFile.open(layout.path(manifest.incrs[-1].name), create=False)
            return
        seq = jobs.next_incr_seq
        name = layout.incr_name(seq)
        self.writer.aof = AofFile.open(layout.path(name), create=True, exclusive=True)
        jobs.next_incr_seq += 1
        fsync_dir(layout.aof_dir)
        new = Manifest(manifest.base, [Entry(name, seq, "i")])
        layout.write_manifest(new)
        jobs.manifest = new
        log.info("Creating AOF incr file %s on server start", name)

    # --- cron -----------------------------------------------------------------------
    def tick(self) -> None:
        """From the server's cron: finished children, write retries and fsync, rewrites."""
        if not self.ready or self.closed:
            return
        now = time.monotonic()
        jobs = self.jobs
        writer = self.writer
        jobs.reap()
        writer.tick(now)
        if writer.aof is not None:
            if writer.need_fresh:
                if not jobs.busy and now >= writer.retry_at:
                    jobs.try_start("rewrite", "Rebuilding the AOF from memory", fresh=True)
            elif not writer.write_failing:
                self._maybe_auto_rewrite(now)
        self._maybe_save_point(now)

    def _maybe_auto_rewrite(self, now: float) -> None:
        config = self.core.config
        percentage = config.auto_aof_rewrite_percentage
        jobs = self.jobs
        if not percentage or jobs.busy or now < self.writer.retry_at:
            return
        current = jobs.aof_current_size()
        if current < config.auto_aof_rewrite_min_size:
            return
        base = jobs.rewrite_base_size or 1
        growth = current * 100 // base - 100
        if growth >= percentage:
            jobs.try_start("rewrite", f"Starting automatic rewriting of AOF on {growth}% growth")

    def _maybe_save_point(self, now: float) -> None:
        params = self.core.config.save.split()
        jobs = self.jobs
        if not params or jobs.busy or now < self.writer.retry_at or len(params) % 2:
            return
        elapsed = time.time() - jobs.lastsave
        for i in range(0, len(params), 2):
            try:
                seconds, changes = int(params[i]), int(params[i + 1])
            except ValueError:
                return
            if self.core.dirty >= changes and elapsed > seconds:
                jobs.try_start("bgsave", f"{changes} changes in {seconds} seconds. Saving...")
                return

    # --- commands (core.persistence) -----------------------------------------------
    def save(self) -> str:
        if self.jobs.busy:
            raise RequestRefused(SAVE_IN_PROGRESS)
        try:
            self.jobs.save_foreground()
        except OSError as exc:
            log.error("SAVE failed: %s", exc)
            self.jobs.last_bgsave_status = "err"
            raise RequestRefused(f"ERR SAVE failed: {exc.strerror or exc}") from None
        return "OK"

    def bgsave(self, wait: bool = True) -> str | Deferred:
        if self.jobs.busy:
            raise RequestRefused(SAVE_IN_PROGRESS)
        return self._start_or_error("bgsave", "Background saving requested by a client",
                                    "Background saving started", wait)

    def bgrewrite(self, wait: bool = True) -> str | Deferred:
        if self.jobs.busy:
            raise RequestRefused(REWRITE_IN_PROGRESS)
        return self._start_or_error("rewrite", "Background append only file rewriting requested by a client",
                                    "Background append only file rewriting started", wait)

    def _start_or_error(self, kind: str, why: str, started: str, wait: bool) -> str | Deferred:
        """Start the job; ``started`` once its child runs. When the start's file steps run
        on a thread first, a Deferred (``wait``) that resolves to ``started`` after the
        fork or to the start's error, as Redis answers after its fork (else ``started``
        at once: inside MULTI, whose block cannot stay open meanwhile)."""
        try:
            prep = self.jobs.start(kind, why)
        except StartFailed as exc:
            log.warning("Can't start the background %s: %s", "save" if kind == "bgsave" else "rewrite", exc)
            raise RequestRefused(start_error(kind, str(exc))) from None
        if prep is None or not wait:
            return started
        deferred = Deferred()

        def told(error: str | None) -> None:
            deferred.resolve(Simple(started) if error is None else ErrorReply(start_error(kind, error)))

        prep.waiters.append(told)
        return deferred

    def dataset_replaced(self) -> None:
        """The whole dataset was replaced without effects (a replica's full resync).

        The files on disk no longer lead to the memory, so a fresh rewrite starts (retried
        from the cron if it cannot start now); until it finishes, what is on disk is the
        state before the replacement.
        """
        writer = self.writer
        if not writer.aof_on:
            return
        self.jobs.kill()
        writer.need_fresh = True
        writer.retry_at = 0.0
        self.jobs.try_start("rewrite", "Dataset replaced: writing a new base", fresh=True)

    # --- CONFIG SET appendonly ---------------------------------------------------------------
    def config_changed(self, name: str, value: Any) -> None:
        writer = self.writer
        if name != "appendonly" or bool(value) == writer.aof_on:
            return
        if not self.ready:
            writer.aof_on = bool(value)  # started() opens the AOF, if on, once loading is over
            return
        self.jobs.kill()
        if value:
            writer.aof_on = True
            try:
                self.jobs.start("rewrite", "AOF switched on: writing the initial base", fresh=True)
            except StartFailed as exc:
                writer.aof_on = False
                raise ValueError(f"can't start the AOF: {exc}") from None
        else:
            writer.turn_off()
            log.info("AOF switched off")

    # --- shutdown -------------------------------------------------------------------
    def close(self, save: bool | None = None) -> None:
        """SHUTDOWN and SIGTERM: stop any child, flush and fsync, save if asked."""
        if self.closed:
            return
        self.closed = True
        self.jobs.kill()
        writer = self.writer
        if not self.ready:
            writer.worker.stop()
            return
        aof = writer.aof
        fresh_unfinished = aof is not None and is_temp(aof)
        if not writer.need_fresh and not fresh_unfinished:
            writer.sync_out()
        points = bool(self.core.config.save.split())
        must = writer.aof_on and (writer.need_fresh or fresh_unfinished)
        if save is True or (save is None and (points or must)):
            log.info("Saving the final snapshot before exiting.")
            try:
                self.jobs.save_foreground()
            except OSError as exc:
                log.error("Error trying to save the DB, can't exit cleanly: %s", exc)
        writer.stop()

    # --- INFO persistence -------------------------------------------------------------
    def info(self) -> list[tuple[str, Any]]:
        core = self.core
        jobs = self.jobs
        writer = self.writer
        running = jobs.running()
        now = time.monotonic()
        aof = writer.aof
        fields: list[tuple[str, Any]] = [
            ("loading", int(core.loading)),
            ("async_loading", 0),
            ("rdb_changes_since_last_save", core.dirty),
            ("rdb_bgsave_in_progress", int(running is not None and running[0] == "bgsave")),
            ("rdb_last_save_time", int(jobs.lastsave)),
            ("rdb_last_bgsave_status", jobs.last_bgsave_status),
            ("rdb_saves", jobs.saves),
            ("aof_enabled", int(writer.aof_on)),
            ("aof_rewrite_in_progress", int(running is not None)),
            ("aof_rewrite_scheduled", int(writer.need_fresh and running is None)),
            ("aof_last_rewrite_time_sec", jobs.last_rewrite_time_s),
            ("aof_current_rewrite_time_sec", int(now - running[1]) if running is not None else -1),
            ("aof_last_bgrewrite_status", jobs.last_rewrite_status),
            ("aof_last_rewrite_status", jobs.last_rewrite_status),
            ("aof_rewrites", jobs.rewrites),
            ("aof_last_write_status", writer.write_status),
            ("aof_current_size", jobs.aof_current_size()),
            ("aof_base_size", jobs.base_size),
            ("aof_buffer_length", len(aof.buf) if aof is not None else 0),
            ("aof_pending_bio_fsync", writer.worker.pending),
            ("aof_fsync_policy", core.config.appendfsync),
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


