"""One session's working-memory scratchpad: its notes, their own deadlines, its deadline.

The notes are kept as a small hash is (``stores/hashes.py``): while the scratchpad is at
most ``PACKED_BYTES`` (1 KB) they are ONE bytes object in insertion order,
``00 key 01 value 00 key 01 value 00`` with 0x00-0x02 escaped inside keys and values, and
a lookup is one ``bytes.partition`` on ``00 <key> 01`` (which occurs only at that key's
entry), in C. A note then costs its bytes plus 2 where a dict cost about 145 more (two
bytes objects and a slot). Past 1 KB the notes move to a dict, in the same order, and stay
there while the session lives (an empty session is removed, so a new one starts packed;
a restore packs again what fits).

Deadlines of single notes are a dict beside the notes (None while no note has one), so a
note without a TTL costs nothing there. Nothing outside this object sees the form: reads
and writes, their order, the effect records and the snapshot rows are the same for both.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hotkv_server.stores.hashes import (
    PACKED_BYTES,
    PackedPairs,
    pack,
    packed_pop,
    packed_put,
    unpack,
)

_END = b"\x00"  # ends an entry; the buffer starts with one
_SEP = b"\x01"  # between a key and its value
_EMPTY = _END


class Scratchpad(PackedPairs):
    """A session's notes (packed or a dict), their deadlines and the session's deadline;
    the reads of the notes (``get``, ``in``, ``len``, ``names``, ``to_dict``) are
    ``PackedPairs``'.

    Change it only through ``set``, ``pop`` and ``set_deadline``/``drop_deadline``: they keep
    the packed form and the deadlines in step."""

    __slots__ = ("_map", "_packed", "deadlines", "expires_at")

    def __init__(self, expires_at: int | None = None) -> None:
        #: the packed form; ``_EMPTY`` once ``_map`` holds the notes
        self._packed = _EMPTY
        #: the dict form, None while packed
        self._map: dict[bytes, bytes] | None = None
        #: the notes' own deadlines (ms), None while no note has one
        self.deadlines: dict[bytes, int] | None = None
        self.expires_at = expires_at

    # --- the form ----------------------------------------------------------------------
    def buffer_size(self) -> int:
        """The packed form's length in bytes (1 once in a dict)."""
        return len(self._packed)

    # --- reads (and PackedPairs') -----------------------------------------------------
    def __bool__(self) -> bool:
        notes = self._map
        return bool(notes) if notes is not None else len(self._packed) > 1

    def pairs(self) -> Iterator[tuple[bytes, bytes]]:
        """``(key, value)`` in insertion order."""
        notes = self._map
        if notes is not None:
            return iter(list(notes.items()))
        flat = unpack(self._packed)
        return zip(flat[::2], flat[1::2], strict=True)

    def alive(self, now_ms: int) -> bool:
        return self.expires_at is None or self.expires_at > now_ms

    def key_alive(self, key: bytes, now_ms: int) -> bool:
        deadlines = self.deadlines
        if deadlines is not None:
            deadline = deadlines.get(key)
            if deadline is not None:
                return deadline > now_ms
        return key in self

    def live_items(self, now_ms: int) -> dict[bytes, bytes]:
        deadlines = self.deadlines
        if not deadlines:
            return self.to_dict()
        return {k: v for k, v in self.pairs() if (d := deadlines.get(k)) is None or d > now_ms}

    # --- writes ------------------------------------------------------------------------
    def set(self, key: bytes, value: bytes) -> None:
        """Set a note's value (its place kept if it exists, else at the end)."""
        notes = self._map
        if notes is not None:
            notes[key] = value
            return
        packed, _ = packed_put(self._packed, key, value)
        if packed is self._packed:
            return
        if len(packed) > PACKED_BYTES:
            flat = unpack(packed)
            keys = flat[::2]
            if self.deadlines:  # the keys the deadlines and the expiry heap hold: shared
                same = {k: k for k in self.deadlines}
                keys = [same.get(k, k) for k in keys]
            self._map = dict(zip(keys, flat[1::2], strict=True))
            self._packed = _EMPTY
        else:
            self._packed = packed

    def pop(self, key: bytes) -> bytes | None:
        """Remove a note (and its deadline); its value, None when absent."""
        deadlines = self.deadlines
        if deadlines is not None and deadlines.pop(key, None) is not None and not deadlines:
            self.deadlines = None
        notes = self._map
        if notes is not None:
            return notes.pop(key, None)
        self._packed, value = packed_pop(self._packed, key)
        return value

    def set_deadline(self, key: bytes, at: int) -> None:
        deadlines = self.deadlines
        if deadlines is None:
            self.deadlines = {key: at}
        else:
            deadlines[key] = at

    def drop_deadline(self, key: bytes) -> None:
        deadlines = self.deadlines
        if deadlines is not None and deadlines.pop(key, None) is not None and not deadlines:
            self.deadlines = None

    def deadline(self, key: bytes) -> int | None:
        deadlines = self.deadlines
        return None if deadlines is None else deadlines.get(key)

    @classmethod
    def loaded(cls, expires_at: int | None, entries: Any) -> Scratchpad:
        """A scratchpad from a snapshot row's ``[[key, value, deadline|None], ...]``."""
        pad = cls(expires_at)
        flat: list[bytes] = []
        deadlines: dict[bytes, int] = {}
        for key, value, deadline in entries:
            flat.append(key)
            flat.append(value)
            if deadline is not None:
                deadlines[key] = deadline
        if deadlines:
            pad.deadlines = deadlines
        if len(set(flat[::2])) * 2 == len(flat):
            packed = pack(flat)
            if len(packed) <= PACKED_BYTES:
                pad._packed = packed
                return pad
        for i in range(0, len(flat), 2):
            pad.set(flat[i], flat[i + 1])
        return pad
