"""The data directory's files while the server runs: the manifest, new bases, forked jobs.

``Jobs`` owns the manifest and the numbering of the files, starts the forked child that
writes a new base (BGREWRITEAOF, BGSAVE, automatic rewrites, fresh rewrites after a disk
error), collects it from the cron and installs its base, and writes a base in the
foreground (SAVE, shutdown). A rewrite never leaves the directory unloadable: when it
starts, a new incremental file is created and added to the manifest (old base + old
increments + new increment replay to the same state), and the child writes the state of
the fork instant into a temp file. When the child is done: write the manifest
``[new base, new increment]`` atomically, rename the temp file, fsync the directory, then
delete the old files. A "fresh" rewrite (the files do not describe the memory) keeps its
new increment a temp file until the base exists.

The install's file steps (three fsyncs and a directory fsync: 100 ms on a busy disk) run
on a thread, ``Install``, while the loop goes on serving; the job counts as running until
the loop has adopted the result (``reap``, woken by the thread). Writes that arrive
meanwhile go to the new increment, which both the old and the new manifest list, so the
directory is loadable at every step. Nothing else touches the manifest while a job runs
(SAVE and another rewrite are refused; ``kill`` waits for the thread).

The start's file steps run on a thread too, ``Prepare`` (the normal case: the AOF is on and
the files describe the memory): the new increment is created and the directory fsynced,
then the manifest ``[base, old increments, new increment]`` is written (fsync, rename,
directory fsync), while the loop goes on writing records to the old increment. That is
safe at every instant: until the new manifest is durable the new file is empty and listed
nowhere (startup removes it), and once it is, replay reads the old increment before the
new, still empty one. When the thread is done the loop (``_prepared``, one callback)
writes out the old increment's buffer, forks and makes the new increment the open one,
with nothing in between: the child's snapshot is exactly the records before the switch.
The job counts as running from the request on (a second rewrite, SAVE and BGSAVE are
refused); ``kill`` waits for the thread and keeps writing to the old increment.

A client that asked (BGREWRITEAOF, BGSAVE) waits for the outcome: ``start`` returns the
``Prepare`` and the caller adds a waiter to ``Prepare.waiters``, called once on the loop
(soon after, never from inside ``_prepared`` or ``kill``) with None when the child has been
forked, or with why the start failed or was given up.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
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


#: told once how a prepared start ended: None once the child runs, else why it did not start
StartWaiter = Callable[[str | None], None]


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
    install: Install | None = None  # the child is done: its base is being installed


@dataclass
class Install:
    """The file steps that make ``manifest`` the data (see ``install_files``), and how far
    they got; run on a thread for a background job, inline for SAVE."""

    manifest: Manifest  # its files may still be temp files: ``renames``
    renames: list[tuple[str, str]]
    done: threading.Event = field(default_factory=threading.Event)
    written: bool = False  # the manifest is on disk (its files exist, maybe as temp-<name>)
    renamed: bool = False  # the files have their names, and the directory is fsynced
    base_size: int = 0
    error: BaseException | None = None
    seconds: float = 0.0  # how long the file steps took (off the loop, for a background job)


@dataclass
class Prepare:
    """A start's file steps (``prepare_files``), run on a thread before the fork, and how
    far they got. The job counts as running meanwhile."""

    kind: str
    why: str
    name: str  # the new increment's file name
    seq: int
    manifest: Manifest  # the current one plus the new increment
    old: AofFile  # the increment the loop writes meanwhile (and until the fork)
    started: float = field(default_factory=time.monotonic)
    done: threading.Event = field(default_factory=threading.Event)
    fd: int = -1  # the new increment, created (and the directory fsynced, if ``synced``)
    synced: bool = False
    written: bool = False  # the manifest naming it has its name (durable unless ``error``)
    error: OSError | None = None
    seconds: float = 0.0  # how long the file steps took, off the loop
    waiters: list[StartWaiter] = field(default_factory=list)  # the clients that asked


def prepare_files(layout: Layout, prep: Prepare) -> None:
    """Create the new increment, fsync the directory, then write the manifest that lists
    it after the old ones. Only files and ``prep``: any thread may run it."""
    began = time.monotonic()
    try:
        prep.fd = os.open(layout.path(prep.name),
                          os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | os.O_CREAT | os.O_EXCL, 0o644)
        fsync_dir(layout.aof_dir)
        prep.synced = True
        layout.write_manifest(prep.manifest, renamed=lambda: setattr(prep, "written", True))
    except OSError as exc:
        prep.error = exc
    prep.seconds = time.monotonic() - began


def install_files(layout: Layout, install: Install) -> None:
    """Manifest first, renames after: a crash in between leaves a manifest naming files
    that exist as ``temp-<name>``, which startup renames. The replaced files are listed as
    history until they are deleted. Only files and ``install``: any thread may run it."""
    manifest = install.manifest
    began = time.monotonic()
    layout.write_manifest(manifest, renamed=lambda: setattr(install, "written", True))
    for source, target in install.renames:
        os.replace(source, target)
    fsync_dir(layout.aof_dir)
    install.renamed = True
    if manifest.history:
        for entry in manifest.history:
            unlink(layout.path(entry.name))
        manifest.history = []
        try:
            layout.write_manifest(manifest)
        except OSError as exc:  # harmless: the next start drops the history entries
            log.warning("Can't rewrite the manifest without its history: %s", exc)
    install.base_size = file_size(layout.path(manifest.base.name)) if manifest.base else 0
    install.seconds = time.monotonic() - began


class Jobs:
    """The manifest, the file numbering and sizes, the running child and the save stats."""

    def __init__(self, core: Core, layout: Layout, writer: AofWriter) -> None:
        self.core = core
        self.layout = layout
        self.writer = writer
        self.manifest: Manifest | None = None
        self.job: RewriteJob | None = None
        self.preparing: Prepare | None = None  # a start waiting for its file steps
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
        self.latest_fork_usec = 0  # the last fork's time on the loop (the log line)

    @property
    def busy(self) -> bool:
        """A job runs (from the request on: its start's file steps count)."""
        return self.job is not None or self.preparing is not None

    def running(self) -> tuple[str, float] | None:
        """The running job's kind ("rewrite", "bgsave") and start (monotonic), if any."""
        if self.job is not None:
            return self.job.kind, self.job.started
        if self.preparing is not None:
            return self.preparing.kind, self.preparing.started
        return None

    def aof_current_size(self) -> int:
        aof = self.writer.aof
        return self.base_size + self.old_incr_size + (aof.size if aof is not None else 0)

    def back_off(self) -> None:
        self.retry_delay = min(RETRY_MAX_S, max(RETRY_MIN_S, self.retry_delay * 2))
        self.writer.retry_at = time.monotonic() + self.retry_delay

    def try_start(self, kind: str, why: str, *, fresh: bool = False) -> str | None:
        """``start`` for the cron and other starts nobody waits for: a failure is logged and
        backed off; returned too (None: started, or its file steps are under way)."""
        try:
            self.start(kind, why, fresh=fresh)
        except StartFailed as exc:
            log.warning("Can't start the background %s: %s", kind, exc)
            self.back_off()
            return str(exc)
        return None

    # --- background rewrite ---------------------------------------------------------------
    def start(self, kind: str, why: str, *, fresh: bool = False) -> Prepare | None:
        """Switch to a new increment and fork the child writing the base (see module doc):
        in the normal case after the new increment's file steps, on a thread; the
        ``Prepare`` of those is returned then (None: the child runs already)."""
        if self.busy:
            raise StartFailed("a background rewrite is already running")
        writer = self.writer
        fresh = writer.aof_on and (fresh or writer.need_fresh)
        old = writer.aof
        if writer.aof_on and not fresh and old is not None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # driven without a loop (tests): the steps inline
                loop = None
            if loop is not None:
                return self._prepare(kind, why, old, loop)
        self._start_now(kind, why, fresh)
        return None

    def _prepare(self, kind: str, why: str, old: AofFile, loop: asyncio.AbstractEventLoop) -> Prepare:
        """Start the thread of the new increment's file steps; ``_prepared`` forks after."""
        seq = self.next_incr_seq
        self.next_incr_seq += 1
        name = self.layout.incr_name(seq)
        current = self.manifest or Manifest()
        prep = self.preparing = Prepare(kind, why, name, seq,
                                        Manifest(current.base, [*current.incrs, Entry(name, seq, "i")]), old)
        wake = _waker(loop, self.reap)

        def run() -> None:
            try:
                prepare_files(self.layout, prep)
            finally:
                prep.done.set()
                wake()

        threading.Thread(target=run, name="hotkv-aof-prepare", daemon=True).start()
        return prep

    def _prepared(self, prep: Prepare) -> None:
        """On the loop, once the file steps are done: fork (``_fork_prepared``), then tell
        the waiting clients how it went."""
        self.preparing = None
        _tell(prep, self._fork_prepared(prep))

    def _fork_prepared(self, prep: Prepare) -> str | None:
        """Write out the old increment, fork and switch to the new one at once (or give the
        prepared file up, see ``_abandon``). None once the child runs, else why not (a
        failure is logged and counted)."""
        writer = self.writer
        if prep.error is not None:
            self._abandon(prep)
            return self._start_failed(prep.kind, f"can't create {prep.name} and the manifest "
                                                 f"listing it: {prep.error.strerror or prep.error}")
        if writer.aof is not prep.old or not writer.aof_on:  # (kill gives it up first)
            self._abandon(prep)
            return "the AOF was switched off before the fork"
        if writer.need_fresh:
            # a write failed meanwhile: the old increment may not cover the memory any more
            self._abandon(prep)
            return self.try_start(prep.kind, prep.why, fresh=True)
        began = time.perf_counter()
        old = prep.old
        if old.pending and not writer.flush(old, strict=False):
            self._abandon(prep)
            return self._start_failed(prep.kind, self.core.write_error or "the AOF can't be written")
        self.manifest = prep.manifest
        self.old_incr_size += old.size
        new = AofFile(self.layout.path(prep.name), prep.fd, 0)
        return self._fork(prep.kind, prep.why, new, prep.seq, fresh=False, began=began,
                          off_loop_ms=prep.seconds * 1000)

    def _abandon(self, prep: Prepare) -> None:
        """Give up a prepared increment and keep writing to the old one. If the manifest
        naming it may be on disk, the empty file stays (listed after the old increment,
        it replays as nothing); else it is removed."""
        if prep.fd >= 0:
            try:
                os.close(prep.fd)
            except OSError:
                pass
        if prep.written:
            self.manifest = prep.manifest
        else:  # its number is free again (a gap in the manifest's numbers means damage)
            if prep.fd >= 0:
                unlink(self.layout.path(prep.name))
            self.next_incr_seq = prep.seq

    def _start_failed(self, kind: str, message: str) -> str:
        """A start that failed after its file steps: logged, counted and backed off, as a
        failed fork (Redis sets aof_last_bgrewrite_status to err); ``message`` returned."""
        log.warning("Can't start the background %s: %s", "save" if kind == "bgsave" else "rewrite",
                    message)
        if kind == "bgsave":
            self.last_bgsave_status = "err"
        self.last_rewrite_status = "err"
        self.back_off()
        return message

    def _start_now(self, kind: str, why: str, fresh: bool) -> None:
        """The start on the loop: AOF off, a fresh rewrite, or driven without a loop."""
        began = time.perf_counter()
        layout = self.layout
        writer = self.writer
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
                written: list[bool] = []
                try:
                    layout.write_manifest(manifest, renamed=lambda: written.append(True))
                except OSError as exc:
                    os.close(new.fd)
                    if written:  # it may be on disk: the empty file stays, listed after the old
                        self.manifest = manifest
                        self.next_incr_seq += 1
                    else:
                        unlink(new.path)
                    raise StartFailed(f"can't write the manifest: {exc}") from None
                self.manifest = manifest
                if old is not None:
                    self.old_incr_size += old.size
            self.next_incr_seq += 1
        self._fork(kind, why, new, incr_seq, fresh=fresh, began=began)

    def _fork(self, kind: str, why: str, new: AofFile | None, incr_seq: int, *, fresh: bool,
              began: float, off_loop_ms: float | None = None) -> str | None:
        """Fork the child and make ``new`` (if any) the open increment, at once. Raises
        StartFailed if the fork fails (``new``, listed already unless fresh, is kept) or,
        after a start off the loop (``off_loop_ms``), counts the failure and returns it."""
        layout = self.layout
        writer = self.writer
        base_seq = self.next_base_seq
        self.next_base_seq += 1
        temp_base = layout.temp_name(layout.base_name(base_seq))
        error: str | None = None
        forked = time.perf_counter()
        try:
            pid, read_fd = rewrite.spawn(self.core.db, layout.path(temp_base), self.core.clock.now_ms())
        except OSError as exc:
            error = f"fork failed: {exc.strerror or exc}"
        self.latest_fork_usec = int((time.perf_counter() - forked) * 1e6)
        if new is not None:
            if error is not None and fresh:
                os.close(new.fd)
                unlink(new.path)
            else:
                # the records before this instant are in the old file (or, fresh, in the base)
                writer.replace(new, fsync_old=not fresh)
        if error is not None:
            if off_loop_ms is not None:  # logged and counted, and told to the waiters
                return self._start_failed(kind, error)
            raise StartFailed(error)
        self.job = RewriteJob(pid, read_fd, base_seq, incr_seq, time.monotonic(), self.core.dirty,
                              kind, fresh, writer.failures)
        what = "saving" if kind == "bgsave" else "append only file rewriting"
        fork_ms = self.latest_fork_usec / 1000
        loop_ms = (forked - began) * 1000
        log.info("%s", why)
        if off_loop_ms is None:
            log.info("Background %s started by pid %d (fork %.1f ms, after %.1f ms creating the "
                     "new increment and its manifest)", what, pid, fork_ms, loop_ms)
        else:
            log.info("Background %s started by pid %d (fork %.1f ms, after %.1f ms writing out "
                     "the old increment; the new increment and its manifest took %.1f ms off "
                     "the loop)", what, pid, fork_ms, loop_ms, off_loop_ms)
        return None

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
        """From the cron (and the threads' wake-ups): fork once a start's file steps are
        done; collect a finished child and start installing its base (or count its error);
        adopt a finished install."""
        prep = self.preparing
        if prep is not None:
            if prep.done.is_set():
                self._prepared(prep)
            return
        job = self.job
        if job is None:
            return
        if job.install is not None:
            if job.install.done.is_set():
                self._installed(job)
            return
        result = rewrite.collect(job.pid, job.read_fd)
        if result is None:
            return
        if result.ok:
            self._begin_install(job)
            return
        self.job = None
        self._failed(job, result.message)

    def _failed(self, job: RewriteJob, message: str) -> None:
        log.warning("Background %s terminated with error: %s",
                    "saving" if job.kind == "bgsave" else "AOF rewrite", message)
        if job.kind == "bgsave":
            self.last_bgsave_status = "err"
        self.last_rewrite_status = "err"
        if job.fresh:
            self.writer.need_fresh = True
        self.back_off()

    def _begin_install(self, job: RewriteJob) -> None:
        """Start the thread that installs the child's base (``install_files``)."""
        layout = self.layout
        base = Entry(layout.base_name(job.base_seq), job.base_seq, "b")
        renames = [(layout.path(layout.temp_name(base.name)), layout.path(base.name))]
        incrs: list[Entry] = []
        aof = self.writer.aof
        if self.writer.aof_on and aof is not None:
            entry = Entry(layout.incr_name(job.incr_seq), job.incr_seq, "i")
            if job.fresh:
                renames.append((aof.path, layout.path(entry.name)))
            incrs.append(entry)
        install = job.install = Install(self._with_history(Manifest(base, incrs)), renames)
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # driven without a loop (tests): the next reap adopts it
            loop = None
        wake = None if loop is None else _waker(loop, self.reap)
        threading.Thread(target=_run_install, args=(layout, install, wake),
                         name="hotkv-aof-install", daemon=True).start()

    def _installed(self, job: RewriteJob) -> None:
        """On the loop, once the install thread is done: adopt its result."""
        install = job.install
        assert install is not None
        self.job = None
        writer = self.writer
        aof = writer.aof
        if install.written:
            self.manifest = install.manifest  # what the disk now says, even after a failure
        if install.renamed and job.fresh and aof is not None and len(install.renames) > 1:
            aof.path = install.renames[1][1]
        if install.error is not None:
            if not install.written:  # else the manifest names it: startup completes the rename
                self._drop_temp_base(job)
            self._failed(job, f"can't install the new base: {install.error}")
            return
        self._adopt(install)
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
        log.info("Background %s finished successfully (%d bytes in %.3f s; installed off the "
                 "loop in %.1f ms)", "saving" if job.kind == "bgsave" else "AOF rewrite",
                 self.base_size, elapsed, install.seconds * 1000)

    def _with_history(self, manifest: Manifest) -> Manifest:
        """``manifest`` listing the current manifest's files it replaces as history (and the
        history a failed install left: those files too must stay listed until deleted)."""
        old = self.manifest
        kept = {e.name for e in manifest.entries()}
        replaced = [*old.entries(), *old.history] if old else []
        manifest.history = [e for e in replaced if e.name not in kept]
        return manifest

    def _adopt(self, install: Install) -> None:
        self.manifest = install.manifest
        self.base_size = install.base_size
        self.old_incr_size = 0
        self.rewrite_base_size = self.aof_current_size()

    def _install(self, manifest: Manifest, renames: list[tuple[str, str]]) -> None:
        """Make ``manifest`` (whose files are still temp files, see ``renames``) the data,
        on the calling thread (SAVE)."""
        install = Install(self._with_history(manifest), renames)
        try:
            install_files(self.layout, install)
        finally:
            if install.written:
                self.manifest = install.manifest
        self._adopt(install)

    def kill(self) -> None:
        """Stop a running child and drop its unfinished base; an install that has begun
        is waited for and adopted instead (its base is complete); a start still in its file
        steps is waited for and given up (the old increment stays the open one)."""
        prep = self.preparing
        if prep is not None:
            prep.done.wait()
            self.preparing = None
            self._abandon(prep)
            log.info("Cancelled the background %s before its fork", prep.kind)
            _tell(prep, "cancelled before the fork (AOF switched, dataset replaced or shutdown)")
            return
        job = self.job
        if job is None:
            return
        if job.install is not None:
            job.install.done.wait()
            self._installed(job)
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


def _run_install(layout: Layout, install: Install, wake: Callable[[], None] | None) -> None:
    """The install thread: the file steps, then a call of the loop's ``reap``."""
    try:
        install_files(layout, install)
    except BaseException as exc:  # reported on the loop, as a failed rewrite
        install.error = exc
    finally:
        install.done.set()
        if wake is not None:
            wake()


def _tell(prep: Prepare, error: str | None) -> None:
    """Call ``prep``'s waiters with the outcome, soon, on the loop: never from inside the
    caller (a command's handler may be running: CONFIG SET appendonly no kills the start)."""
    waiters, prep.waiters = prep.waiters, []
    if not waiters:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no loop: nothing is waiting on one
        loop = None
    for waiter in waiters:
        if loop is not None:
            loop.call_soon(waiter, error)
        else:
            waiter(error)


def _waker(loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> Callable[[], None]:
    def wake() -> None:
        try:
            loop.call_soon_threadsafe(callback)
        except RuntimeError:  # the loop is closed: nothing left to adopt it for
            pass
    return wake
