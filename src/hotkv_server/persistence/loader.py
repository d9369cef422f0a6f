"""Loading a data directory into a Database: base snapshot, then every incremental file.

Replay applies each record with ``core.effects.replay`` (the store appliers a live write
and a replica run too; ``Database.apply`` without a Core) and never consults the clock
while it runs; only once everything is applied are the entries whose absolute
deadline has passed dropped. (Purging in the middle would be wrong: a later effect may
refer to an object that was alive when it was written.)

``Loader.run()`` is a generator that yields now and then, so the server can keep
answering ``-LOADING`` while a large data set loads; ``Loader.load_all()`` runs it through.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from hotkv_server.persistence.framing import FrameError, MappedFile, effect_count, iter_frames
from hotkv_server.persistence.manifest import Layout, Manifest, ManifestError
from hotkv_server.persistence.snapshot import BaseFormatError, decode_base
from hotkv_server.stores.database import Database

log = logging.getLogger("hotkv")

#: check the time every this many records, and yield when a slice took longer than SLICE_S
CHECK_EVERY = 512
SLICE_S = 0.02
PURGE_BATCH = 100_000


class LoadError(Exception):
    """The data cannot be loaded; the message names the file, the offset and the remedy."""


def repair_hint(layout: Layout) -> str:
    """What to do about a damaged record (truncation repairs it)."""
    return f"make a backup of {layout.aof_dir}, then run 'hotkv-check-aof --fix {layout.data_dir}'"


def manifest_hint(layout: Layout) -> str:
    """What to do about a manifest that does not match the files (no automatic repair)."""
    return (f"'hotkv-check-aof {layout.data_dir}' lists the files; restore the manifest from a "
            "backup or correct it by hand (see docs/persistence.md)")


@dataclass
class LoadStats:
    records: int = 0
    base_size: int = 0
    incr_sizes: list[int] = field(default_factory=list)
    total_bytes: int = 0
    loaded_bytes: int = 0
    truncated: tuple[str, int] | None = None
    purged: int = 0
    seconds: float = 0.0


class Loader:
    """Loads ``manifest`` (already read and checked) from ``layout`` into ``db``."""

    def __init__(
        self,
        layout: Layout,
        manifest: Manifest | None,
        db: Database,
        *,
        truncate_torn_tail: bool,
        now_ms: Any,
        apply: Callable[[Any], Any] | None = None,
    ) -> None:
        self.layout = layout
        self.manifest = manifest
        self.db = db
        self.truncate_torn_tail = truncate_torn_tail
        self.now_ms = now_ms  # a callable: the time is read once loading is over
        #: applies one record's wire value (the effect log's ``replay``)
        self.apply = apply or db.apply
        self.stats = LoadStats()

    def load_all(self) -> LoadStats:
        for _ in self.run():
            pass
        return self.stats

    def run(self) -> Iterator[None]:
        started = time.monotonic()
        manifest = self.manifest
        stats = self.stats
        if manifest is None:
            stats.seconds = time.monotonic() - started
            return
        entries = manifest.entries()
        stats.total_bytes = sum(os.path.getsize(self.layout.path(e.name)) for e in entries)
        if manifest.base is not None:
            yield from self._load_base(manifest.base.name)
        last = manifest.incrs[-1].name if manifest.incrs else None
        for entry in manifest.incrs:
            yield from self._load_incr(entry.name, is_last=entry.name == last)
        stats.purged = self._purge()
        stats.seconds = time.monotonic() - started

    # --- base -----------------------------------------------------------------------
    def _load_base(self, name: str) -> Iterator[None]:
        path = self.layout.path(name)
        state: dict[str, Any] = {}
        mark = time.monotonic()
        with MappedFile(path) as mapped:
            size = len(mapped.data)
            try:
                for offset in decode_base(mapped.data, state):
                    if time.monotonic() - mark > SLICE_S:
                        self.stats.loaded_bytes = offset
                        yield
                        mark = time.monotonic()
            except BaseFormatError as exc:
                raise LoadError(
                    f"Bad base file {path} at offset {exc.offset}: {exc.reason}; "
                    f"{repair_hint(self.layout)} (a damaged base cannot be repaired: restore it "
                    "from a backup)"
                ) from None
        try:
            self.db.restore(state)
        except Exception as exc:
            raise LoadError(
                f"Bad base file {path}: a store could not restore its snapshot "
                f"({type(exc).__name__}: {exc}); restore the file from a backup"
            ) from None
        self.stats.base_size = size
        self.stats.loaded_bytes = size
        yield

    # --- incremental files --------------------------------------------------------------
    def _load_incr(self, name: str, *, is_last: bool) -> Iterator[None]:
        path = self.layout.path(name)
        stats = self.stats
        apply = self.apply
        start_bytes = stats.loaded_bytes
        torn_at: int | None = None
        with MappedFile(path) as mapped:
            size = len(mapped.data)
            n = 0
            mark = time.monotonic()
            frames = iter_frames(mapped.data)
            while True:
                try:
                    fr = next(frames, None)
                except FrameError as exc:
                    if exc.torn and is_last:
                        if not self.truncate_torn_tail:
                            raise LoadError(
                                f"Unexpected end of the append only file {path} at offset "
                                f"{exc.offset} ({exc.reason}) and aof-load-truncated is no: "
                                f"{repair_hint(self.layout)}, or set aof-load-truncated yes"
                            ) from None
                        torn_at = exc.offset
                        break
                    raise LoadError(
                        f"Bad file format reading the append only file {path} at offset "
                        f"{exc.offset}: {exc.reason}; {repair_hint(self.layout)}"
                    ) from None
                if fr is None:
                    break
                effect = fr.value
                count = effect_count(effect)
                try:
                    if count is None:
                        raise ValueError("not an effect list")
                    apply(effect)
                except Exception as exc:
                    raise LoadError(
                        f"Bad effect in the append only file {path} at offset {fr.offset}: "
                        f"{type(exc).__name__}: {exc}; {repair_hint(self.layout)}"
                    ) from None
                n += count
                if n % CHECK_EVERY == 0 and time.monotonic() - mark > SLICE_S:
                    stats.loaded_bytes = start_bytes + fr.end
                    yield
                    mark = time.monotonic()
            stats.records += n
        if torn_at is not None:
            os.truncate(path, torn_at)
            log.warning(
                "AOF %s ends inside a record at offset %d (a crash while appending): "
                "truncated it to %d bytes (%d dropped) because aof-load-truncated is yes",
                path, torn_at, torn_at, size - torn_at,
            )
            stats.truncated = (path, torn_at)
            size = torn_at
        stats.incr_sizes.append(size)
        stats.loaded_bytes = start_bytes + size
        yield

    def _purge(self) -> int:
        now = self.now_ms()
        total = 0
        while True:
            removed = self.db.purge_expired(now, PURGE_BATCH)
            total += removed
            if removed < PURGE_BATCH:
                return total


def read_checked_manifest(layout: Layout) -> Manifest | None:
    """The manifest with every file it names present; LoadError otherwise."""
    try:
        manifest = layout.read_manifest()
        if manifest is not None:
            layout.check_files_exist(manifest)
    except ManifestError as exc:
        raise LoadError(f"{exc}; {manifest_hint(layout)}") from None
    return manifest
