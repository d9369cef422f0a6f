"""Working memory: a flat key/value scratchpad per session, with a TTL per key and per session.

Effects (records in ``work_effects``; the handler computes MERGE results from the current
state and the record carries the final value, so replay never re-merges)::

    WorkSet     ["work.set", session, key, value, expires_at|None]   # None removes a TTL
    WorkDel     ["work.del", session, [key, ...]]
    WorkExpire  ["work.expire", session, at]             # the whole scratchpad's deadline
    WorkClear   ["work.clear", session]

A key is live while its own deadline and its session's deadline are both in the future.
A session with no keys left is removed (as Redis removes an empty hash), deadline included.
Active expiry uses one heap of ``(deadline, session, key)`` entries (key ``b""`` with
``is_session`` for session deadlines) validated against the current deadline when popped,
and rebuilt whenever it has doubled since the last rebuild (dropping stale entries).

A session's notes are one packed bytes buffer while small, then a dict (``Scratchpad`` in
``stores/workpad.py``); neither the records nor the snapshot rows depend on the form.

The MERGE arithmetic lives here too (``merge``): it is pure and tested against a model.
"""

from __future__ import annotations

import heapq
import json
import math
import re
from collections.abc import Iterable
from decimal import Decimal, localcontext
from typing import Any

from hotkv_server.stores.base import DictStore, applies
from hotkv_server.stores.work_effects import WorkClear, WorkDel, WorkExpire, WorkSet
from hotkv_server.stores.workpad import Scratchpad

MERGE_MODES: tuple[bytes, ...] = (b"REPLACE", b"APPEND", b"INCR", b"MAX", b"MIN")

#: a stale-entry allowance before the expiry heap is rebuilt from the live deadlines
_HEAP_SLACK = 1024


class WorkingStore(DictStore[Scratchpad]):
    """Every working-memory scratchpad of the server, by session id."""

    name = "work"

    def __init__(self) -> None:
        super().__init__()  # objects: session -> its scratchpad
        # (deadline, session, key, is_session); key is b"" for a session deadline
        self._heap: list[tuple[int, bytes, bytes, bool]] = []
        self._rebuild_at = _HEAP_SLACK

    # --- reads (lazy expiry) ------------------------------------------------------
    def pad(self, session: bytes, now_ms: int) -> Scratchpad | None:
        """The session's scratchpad if its own deadline has not passed (it may hold only
        expired keys; use ``items`` or ``length`` for what is live)."""
        pad = self.objects.get(session)
        if pad is None or not pad.alive(now_ms):
            return None
        return pad

    def get(self, session: bytes, key: bytes, now_ms: int) -> bytes | None:
        pad = self.objects.get(session)
        if pad is None:
            return None
        at = pad.expires_at
        if at is not None and at <= now_ms:
            return None
        deadlines = pad.deadlines
        if deadlines is not None:
            deadline = deadlines.get(key)
            if deadline is not None and deadline <= now_ms:
                return None
        return pad.get(key)

    def items(self, session: bytes, now_ms: int) -> dict[bytes, bytes]:
        pad = self.pad(session, now_ms)
        return {} if pad is None else pad.live_items(now_ms)

    def length(self, session: bytes, now_ms: int) -> int:
        pad = self.pad(session, now_ms)
        if pad is None:
            return 0
        deadlines = pad.deadlines
        if not deadlines:
            return len(pad)
        return len(pad) - sum(1 for d in deadlines.values() if d <= now_ms)

    def key_deadline(self, session: bytes, key: bytes, now_ms: int) -> int | None:
        """The key's own deadline (not the session's); None without one or when missing."""
        pad = self.pad(session, now_ms)
        if pad is None or not pad.key_alive(key, now_ms):
            return None
        return pad.deadline(key)

    def ttl(self, session: bytes, key: bytes, now_ms: int) -> int:
        """Ms left for the key (the earlier of its and its session's deadline), -1 none,
        -2 missing."""
        pad = self.pad(session, now_ms)
        if pad is None or not pad.key_alive(key, now_ms):
            return -2
        deadlines = [d for d in (pad.deadline(key), pad.expires_at) if d is not None]
        if not deadlines:
            return -1
        return min(deadlines) - now_ms

    def present_but_expired(self, session: bytes, now_ms: int) -> bool:
        """Whether a session is still held although its own deadline has passed."""
        pad = self.objects.get(session)
        return pad is not None and not pad.alive(now_ms)

    # --- effects ------------------------------------------------------------------
    @applies(WorkSet)
    def _apply_set(self, effect: WorkSet) -> None:
        session = effect.session
        key = effect.key
        expires_at = effect.expires_at
        pad = self.objects.get(session)
        if pad is None:
            pad = self.objects[session] = Scratchpad()
        pad.set(key, effect.value)
        if expires_at is None:
            if pad.deadlines is not None:
                pad.drop_deadline(key)
        else:
            pad.set_deadline(key, expires_at)
            self._push((expires_at, session, key, False))

    @applies(WorkDel)
    def _apply_del(self, effect: WorkDel) -> int:
        return self._delete(effect.session, effect.keys_)

    @applies(WorkExpire)
    def _apply_expire(self, effect: WorkExpire) -> int:
        return self._expire(effect.session, effect.at)

    @applies(WorkClear)
    def _apply_clear(self, effect: WorkClear) -> int:
        return self._clear_session(effect.session)

    def _delete(self, session: bytes, keys: list[bytes]) -> int:
        pad = self.objects.get(session)
        if pad is None:
            return 0
        removed = 0
        for key in keys:
            if pad.pop(key) is not None:
                removed += 1
        if not pad:
            del self.objects[session]
        return removed

    def _expire(self, session: bytes, at: int) -> int:
        pad = self.objects.get(session)
        if pad is None:
            return 0
        pad.expires_at = at
        self._push((at, session, b"", True))
        return 1

    def _clear_session(self, session: bytes) -> int:
        pad = self.objects.pop(session, None)
        return 0 if pad is None else len(pad)

    def _push(self, entry: tuple[int, bytes, bytes, bool]) -> None:
        heapq.heappush(self._heap, entry)
        # Re-setting a TTL leaves the old entry behind; rebuilding when the heap has doubled
        # since the last rebuild bounds the stale entries at amortized O(log n) per push.
        if len(self._heap) > self._rebuild_at:
            self._rebuild_heap()

    def _rebuild_heap(self) -> None:
        heap: list[tuple[int, bytes, bytes, bool]] = []
        for session, pad in self.objects.items():
            if pad.expires_at is not None:
                heap.append((pad.expires_at, session, b"", True))
            if pad.deadlines is not None:
                heap.extend((d, session, k, False) for k, d in pad.deadlines.items())
        heapq.heapify(heap)
        self._heap = heap
        self._rebuild_at = max(2 * len(heap), _HEAP_SLACK)

    # --- expiry -------------------------------------------------------------------
    def purge_expired(self, now_ms: int, limit: int) -> int:
        heap = self._heap
        removed = 0
        while heap and heap[0][0] <= now_ms and removed < limit:
            deadline, session, key, is_session = heapq.heappop(heap)
            pad = self.objects.get(session)
            if pad is None:
                continue
            hook = self.on_expire
            if is_session:
                if pad.expires_at == deadline:
                    del self.objects[session]
                    removed += len(pad)
                    if hook is not None:
                        hook("work", session, None)
            elif pad.deadline(key) == deadline:
                pad.pop(key)
                removed += 1
                if hook is not None:
                    hook("work", session, key)
                if not pad:
                    del self.objects[session]
        return removed

    # --- id space -----------------------------------------------------------------
    def ids(self, now_ms: int) -> Iterable[bytes]:
        return [s for s in self.objects if self.exists(s, now_ms)]

    def exists(self, ident: bytes, now_ms: int) -> bool:
        pad = self.pad(ident, now_ms)
        return pad is not None and self.length(ident, now_ms) > 0

    def clear(self) -> None:
        self.objects.clear()
        self._heap = []
        self._rebuild_at = _HEAP_SLACK

    def stats(self, now_ms: int) -> dict[str, int]:
        objects = entries = 0
        for session in self.objects:
            n = self.length(session, now_ms)
            if n:
                objects += 1
                entries += n
        return {"objects": objects, "entries": entries}

    # --- persistence (snapshot rows: DictStore) ------------------------------------
    def _row(self, obj: Scratchpad) -> list[Any]:
        deadlines = obj.deadlines or {}
        return [obj.expires_at, [[k, v, deadlines.get(k)] for k, v in obj.pairs()]]

    def _load_row(self, session: bytes, state: Any) -> None:
        expires_at, entries = state
        self.objects[session] = Scratchpad.loaded(expires_at, entries)

    def restore(self, state: Any) -> None:
        self.clear()
        for session, *row in state:
            self._load_row(session, row)
        self._rebuild_heap()  # once, where load_id would push each deadline

    def load_id(self, ident: bytes, state: Any) -> None:
        self._load_row(ident, state)
        pad = self.objects[ident]
        if pad.expires_at is not None:
            self._push((pad.expires_at, ident, b"", True))
        for key, deadline in (pad.deadlines or {}).items():
            self._push((deadline, ident, key, False))

    def drop_id(self, ident: bytes) -> None:
        self._clear_session(ident)


# --- MERGE ------------------------------------------------------------------------------


class MergeError(ValueError):
    """A MERGE that cannot be done; ``str(exc)`` is the full error reply text."""


_INT_RE = re.compile(rb"-?(?:0|[1-9][0-9]*)")
_FLOAT_RE = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
#: significant digits of a float result (a long double printed with %.17Lg, as Redis does)
_FLOAT_DIGITS = 17

Number = int | Decimal


def parse_number(raw: bytes) -> Number | None:
    """A 64-bit integer (Redis-strict text) as int, another finite decimal number as
    Decimal (exact, so 0.1 + 0.2 is 0.3 as INCRBYFLOAT shows it), else None."""
    if _INT_RE.fullmatch(raw):
        value = int(raw)
        if _INT64_MIN <= value <= _INT64_MAX:
            return value
    if not _FLOAT_RE.fullmatch(raw):
        return None
    if not math.isfinite(float(raw)):
        return None
    return Decimal(raw.decode("ascii"))


def format_number(value: Number) -> bytes:
    """Integers as they are; other numbers in plain notation rounded to 17 significant
    digits without trailing zeros (``10.5``, ``3``, ``0.3``), like Redis INCRBYFLOAT."""
    if isinstance(value, int):
        return b"%d" % value
    with localcontext() as ctx:
        ctx.prec = _FLOAT_DIGITS
        rounded = +value
    text = format(rounded, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    if text in ("-0", ""):
        text = "0"
    return text.encode()


def _add(a: Number, b: Number) -> Number:
    if isinstance(a, int) and isinstance(b, int):
        total = a + b
        if not _INT64_MIN <= total <= _INT64_MAX:
            raise MergeError("ERR increment or decrement would overflow")
        return total
    with localcontext() as ctx:
        ctx.prec = _FLOAT_DIGITS
        result = Decimal(a) + Decimal(b)
    if not math.isfinite(float(result)):
        raise MergeError("ERR increment would produce NaN or Infinity")
    return result


def _show(raw: bytes) -> str:
    return raw[:128].decode("utf-8", "replace").replace("\r", " ").replace("\n", " ")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("not a finite number")
    return value


def _reject_constant(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")


def _load_json(text: str) -> Any:
    """Strict JSON (no NaN/Infinity, no numbers beyond a double); ValueError otherwise."""
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def merge(mode: bytes, key: bytes, current: bytes | None, value: bytes) -> bytes:
    """The value stored after ``SET ... MERGE mode`` of ``value`` over ``current``
    (None: the key is absent). Raises MergeError naming what is wrong."""
    if mode == b"REPLACE":
        return value
    if mode == b"APPEND":
        return _merge_append(key, current, value)
    if mode not in (b"INCR", b"MAX", b"MIN"):
        raise MergeError(
            f"ERR invalid MERGE '{_show(mode)}': expected one of REPLACE|APPEND|INCR|MAX|MIN"
        )
    operand = parse_number(value)
    if operand is None:
        raise MergeError(
            f"ERR invalid value '{_show(value)}': MERGE {mode.decode()} expects a number "
            "(integer or float)"
        )
    if current is None:
        return format_number(operand)
    stored = parse_number(current)
    if stored is None:
        raise MergeError(
            f"ERR MERGE {mode.decode()}: the stored value of '{_show(key)}' is not a number"
        )
    if mode == b"INCR":
        return format_number(_add(stored, operand))
    if mode == b"MAX":
        return format_number(operand if operand > stored else stored)
    return format_number(operand if operand < stored else stored)


def _merge_append(key: bytes, current: bytes | None, value: bytes) -> bytes:
    items: Any = []
    if current is not None:
        try:
            items = _load_json(current.decode("utf-8"))
        except ValueError:  # UnicodeDecodeError included
            items = None
        if not isinstance(items, list):
            raise MergeError(
                f"ERR MERGE APPEND: the stored value of '{_show(key)}' is not a JSON array"
            )
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        raise MergeError("ERR invalid value: MERGE APPEND needs UTF-8 text") from None
    try:
        element: Any = _load_json(text)
    except ValueError:
        element = text  # not JSON: appended as a string
    items.append(element)
    text = json.dumps(items, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a JSON escape: keep it escaped
        return json.dumps(items, separators=(",", ":")).encode("ascii")
