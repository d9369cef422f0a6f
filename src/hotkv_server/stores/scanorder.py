"""The walk order behind SCAN, HSCAN and SSCAN: names sorted by their 64-bit hash.

A cursor is the hash to resume at, so every name that exists for a whole walk is returned
whatever is written in between, and names sharing a hash are never split across two
steps. The sorted list is built at cursor 0 (or when missing) and only if names were
created since it was built (``added`` counts creations); names created after it was
built may be missed, which SCAN allows.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

import numpy as np


class ScanOrder:
    """The cached order of one collection of names (a keyspace, a hash's fields ...)."""

    __slots__ = ("_built_at", "_cursors", "_names")

    def __init__(self) -> None:
        self._built_at = -1
        self._cursors: np.ndarray[Any, np.dtype[np.uint64]] | None = None
        self._names: np.ndarray[Any, np.dtype[np.object_]] | None = None

    def step(self, names: Collection[bytes], added: int, cursor: int, count: int) -> tuple[int, list[bytes]]:
        """``(next cursor, names of this step)``; the caller drops names gone since."""
        cursors, in_order, start = self._resume(names, added, cursor)
        n = len(in_order)
        end = min(start + max(count, 1), n)
        while 0 < end < n and cursors[end] == cursors[end - 1]:
            end += 1
        found: list[bytes] = in_order[start:end].tolist()
        if end < n:
            return int(cursors[end]), found
        # the walk is over: let go of the list (a walk still running rebuilds it)
        self.reset()
        return 0, found

    def step_kept(self, names: Collection[bytes], added: int, cursor: int, count: int,
                  keep: Callable[[bytes], bool]) -> tuple[int, list[bytes]]:
        """``step`` over only the names ``keep`` accepts (a tenant's key patterns): COUNT
        counts those and the cursor is the hash of the next one kept, so nothing in the
        reply depends on the other names."""
        cursors, in_order, i = self._resume(names, added, cursor)
        n = len(in_order)
        seen = 0
        found: list[bytes] = []
        count = max(count, 1)
        while i < n and (seen < count or cursors[i] == cursors[i - 1]):
            name = in_order[i]
            if keep(name):
                seen += 1
                found.append(name)
            i += 1
        while i < n and not keep(in_order[i]):
            i += 1
        if i < n:
            return int(cursors[i]), found
        self.reset()
        return 0, found

    def _resume(self, names: Collection[bytes], added: int, cursor: int) -> tuple[
            np.ndarray[Any, np.dtype[np.uint64]], np.ndarray[Any, np.dtype[np.object_]], int]:
        """The order (built at cursor 0 if names were created since, or when missing) and
        the position ``cursor`` resumes at."""
        if self._cursors is None or (cursor == 0 and self._built_at != added):
            self._build(names, added)
        cursors = self._cursors
        in_order = self._names
        assert cursors is not None and in_order is not None
        return cursors, in_order, int(np.searchsorted(cursors, np.uint64(cursor))) if cursor else 0

    def reset(self) -> None:
        self._cursors = None
        self._names = None

    def _build(self, names: Collection[bytes], added: int) -> None:
        """Sort by hash as an unsigned 64-bit number (0 is taken as 1, since cursor 0
        means "start"); numpy keeps this near 0.2 s per million names."""
        arr = np.empty(len(names), dtype=object)
        arr[:] = list(names)
        hashes = np.fromiter(map(hash, arr), dtype=np.int64, count=len(arr)).view(np.uint64)
        hashes[hashes == 0] = 1
        order = np.argsort(hashes)
        self._cursors = hashes[order]
        self._names = arr[order]
        self._built_at = added
