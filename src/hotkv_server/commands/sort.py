"""SORT and SORT_RO, as Redis 7 answers them: the elements of a list, a set or a sorted set,
sorted by their own value or by weights in other keys, with other keys' values fetched.

``SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA]
[STORE destination]`` (SORT_RO the same without STORE):

* The sort is numeric (each weight read as C's ``strtod`` reads it: leading blanks, hex, an
  empty text is 0; anything else is ``One or more scores can't be converted into double``),
  equal weights ordered by the element's bytes; ``ALPHA`` compares bytes (Redis's
  ``strcoll`` under the C locale). A pattern's ``*`` is replaced by the element:
  ``weight_*`` names a string key, ``obj_*->field`` a hash field; ``#`` is the element
  itself. A missing weight counts as 0 (numeric) or sorts first (ALPHA); a GET of a missing
  key or field is a null (an empty string in a stored list).
* A BY pattern without ``*`` (``BY nosort``) keeps the native order (a list's, a sorted
  set's by score; DESC reverses it, LIMIT slices it). A set has none: it is sorted ALPHA
  when the result is stored or the call comes from a script, as Redis does to stay
  deterministic.
* ``STORE`` replaces the destination (whatever it held, its TTL too) with a list, one
  ``kv.put``, or deletes it (``kv.del``) when the result is empty, and answers the length.
* BY and GET read other keys: a user without read access to every key (``~*`` or
  ``%R~*``) is refused them, and in cluster mode a pattern whose keys may fall in another
  slot than the sorted key is refused (Redis 7.4's rule: a hash tag before the ``*`` pins
  the slot; ``GET #`` reads nothing else).

The keys are found as Redis's ``sortGetKeys`` finds them: the sorted key, and the argument
after the last STORE (the ``unknown`` key specs of COMMAND INFO).
"""

from __future__ import annotations

import math
from binascii import crc_hqx
from typing import Any

from hotkv_server.commands.numbers import strtod
from hotkv_server.commands.typed import counted
from hotkv_server.engine.args import parse_int
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import NOT_INTEGER, SYNTAX, CommandError, WrongTypeError
from hotkv_server.engine.registry import command, key_spec
from hotkv_server.engine.slots import key_slot
from hotkv_server.scripting.engine import in_script
from hotkv_server.stores.hashes import HashValue
from hotkv_server.stores.keyspace_effects import KvDel, KvPut
from hotkv_server.stores.listvalue import ListValue
from hotkv_server.stores.sets import SetValue
from hotkv_server.stores.zsetvalue import SortedSetValue

NOT_DOUBLE = "ERR One or more scores can't be converted into double"
_ACL_DENIED = "ERR {} option of SORT denied due to insufficient ACL permissions."
_CLUSTER_DENIED = ("ERR {} option of SORT denied in Cluster mode when keys formed by the "
                   "pattern may be in different slots.")

_RO_ACCESS = ("RO", "access")
_OW_UPDATE = ("OW", "update")
_COMPLEXITY = ("O(N+M*log(M)) where N is the number of elements in the list or set to sort, "
               "and M the number of returned elements. When the elements are not sorted, "
               "complexity is O(N).")
_SYNTAX_RO = "key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] [ASC|DESC] [ALPHA]"
_PATTERN_NOTES = ("For the optional BY/GET keyword. It is marked 'unknown' because the key "
                  "names derive from the content of the key we sort")
_STORE_NOTES = ("For the optional STORE keyword. It is marked 'unknown' because the keyword "
                "can appear anywhere in the argument array")
_SORTED_KEY = key_spec(1, "RO access", arg="key")
_PATTERN_KEYS = key_spec(0, "RO access", unknown=True, notes=_PATTERN_NOTES, arg="pattern")


def sort_keys(argv: list[bytes]) -> list[tuple[bytes, tuple[str, ...]]]:
    """SORT's keys with their flags, as Redis's ``sortGetKeys``: the sorted key, and the
    argument after the last STORE (the arguments of LIMIT, GET and BY are skipped; STORE's
    own is not, so ``STORE STORE d`` names ``d``)."""
    keys: list[tuple[bytes, tuple[str, ...]]] = [(argv[1], _RO_ACCESS)]
    store: bytes | None = None
    argc = len(argv)
    i = 2
    while i < argc:
        word = argv[i].lower()
        if word == b"limit":
            i += 2
        elif word in (b"get", b"by"):
            i += 1
        elif word == b"store" and i + 1 < argc:
            store = argv[i + 1]
        i += 1
    if store is not None:
        keys.append((store, _OW_UPDATE))
    return keys


class _Options:
    """One call's options, as SORT's parser leaves them."""

    __slots__ = ("alpha", "by", "desc", "dontsort", "gets", "limit_count", "limit_start", "store")

    def __init__(self) -> None:
        self.desc = False
        self.alpha = False
        self.dontsort = False
        self.by: bytes | None = None
        self.gets: list[bytes] = []
        self.limit_start = 0
        self.limit_count = -1
        self.store: bytes | None = None


def _cstr(raw: bytes) -> bytes:
    """What C's string functions see of ``raw``: the bytes before the first NUL."""
    end = raw.find(b"\0")
    return raw if end < 0 else raw[:end]


def pattern_slot(pattern: bytes) -> int:
    """The one slot every key a pattern can form falls in, else -1 (Redis's
    ``patternHashSlot``): a ``{tag}`` before any ``*``, ``?``, ``[`` or ``\\`` decides it,
    a pattern without them is one key."""
    start = -1
    for i, byte in enumerate(pattern):
        if byte in b"*?[\\":
            return -1
        if start == -1 and byte == 0x7B:  # {
            start = i
        elif start >= 0 and byte == 0x7D:  # }
            if i == start + 1:
                start = -2  # "{}" hashes the whole key
            else:
                return crc_hqx(pattern[start + 1 : i], 0) & 0x3FFF
    return crc_hqx(pattern, 0) & 0x3FFF


def _full_read_access(user: Any) -> bool:
    """Whether the user may read every key (``~*``, ``allkeys`` or ``%R~*``), which BY and
    GET need since they read keys named by the data."""
    if user is None or user.allkeys:
        return True
    return any(p.read and p.pattern == b"*" for p in user.key_patterns)


def _parse(ctx: Context, argv: list[bytes], readonly: bool) -> _Options:
    opts = _Options()
    cluster = ctx.core.cluster is not None
    full_access = _full_read_access(ctx.user)
    argc = len(argv)
    j = 2
    while j < argc:
        word = argv[j].lower()
        left = argc - j - 1
        if word == b"asc":
            opts.desc = False
        elif word == b"desc":
            opts.desc = True
        elif word == b"alpha":
            opts.alpha = True
        elif word == b"limit" and left >= 2:
            start, count = parse_int(argv[j + 1]), parse_int(argv[j + 2])
            if start is None or count is None:
                raise CommandError(NOT_INTEGER)
            opts.limit_start, opts.limit_count = start, count
            j += 2
        elif word == b"store" and not readonly and left >= 1:
            opts.store = argv[j + 1]
            j += 1
        elif word == b"by" and left >= 1:
            pattern = argv[j + 1]
            opts.by = pattern
            if b"*" not in _cstr(pattern):
                opts.dontsort = True  # a constant weight: nothing to sort (sticky, as Redis)
            else:
                if cluster and pattern_slot(pattern) != key_slot(argv[1]):
                    raise CommandError(_CLUSTER_DENIED.format("BY"))
                if not full_access:
                    raise CommandError(_ACL_DENIED.format("BY"))
            j += 1
        elif word == b"get" and left >= 1:
            pattern = argv[j + 1]
            if cluster and _cstr(pattern) != b"#" and pattern_slot(pattern) != key_slot(argv[1]):
                raise CommandError(_CLUSTER_DENIED.format("GET"))
            if not full_access:
                raise CommandError(_ACL_DENIED.format("GET"))
            opts.gets.append(pattern)
            j += 1
        else:
            raise CommandError(SYNTAX)
        j += 1
    return opts


def _lookup(ctx: Context, pattern: bytes, element: bytes) -> bytes | None:
    """The value a pattern names for one element (Redis's ``lookupKeyByPattern``): the
    element for ``#``, a string key's value, or a hash field's for ``...->field``; None
    when there is none (no ``*``, a missing key or field, a key of another type)."""
    if pattern[:1] == b"#" and (len(pattern) == 1 or pattern[1] == 0):
        return element
    head = _cstr(pattern)
    star = head.find(b"*")
    if star < 0:
        return None
    arrow = head.find(b"->", star + 1)
    if arrow >= 0 and arrow + 2 < len(head):
        name = pattern[:star] + element + pattern[star + 1 : arrow]
        value = ctx.db.kv.lookup(name, ctx.now_ms)
        if value.__class__ is not HashValue:
            return None
        return value.get(pattern[arrow + 2 :])
    value = ctx.db.kv.lookup(pattern[:star] + element + pattern[star + 1 :], ctx.now_ms)
    return value if value.__class__ is bytes else None


def _weight(raw: bytes) -> float | None:
    """A numeric weight as SORT reads it with ``strtod`` (None: not a double)."""
    if raw.isdigit() and len(raw) < 16:
        return float(raw)
    value, used, out_of_range = strtod(raw)
    if out_of_range or math.isnan(value) or (used != len(raw) and raw[used] != 0):
        return None
    return value


def _source(ctx: Context, key: bytes) -> Any:
    """The value to sort: a list, a set or a sorted set, None when missing (WRONGTYPE for
    any other type)."""
    value = counted(ctx, ctx.db.kv.lookup(key, ctx.now_ms))
    if value is None or value.__class__ in (ListValue, SetValue, SortedSetValue):
        return value
    raise WrongTypeError()


def _native(value: Any) -> list[bytes]:
    """The elements in the value's own order (a sorted set's by score)."""
    if value is None:
        return []
    if value.__class__ is ListValue:
        return list(value.items)
    if value.__class__ is SortedSetValue:
        return list(value.members())
    if value.encoding() == "intset":  # Redis walks an intset in numeric order
        return sorted(value.members, key=int)
    return list(value.members)


def _sorted(ctx: Context, elements: list[bytes], opts: _Options) -> list[bytes]:
    """The elements sorted as SORT's comparator orders them."""
    by = opts.by
    if opts.alpha:
        # a store compares whole byte strings, a reply the C strings (strcoll)
        collate = (lambda raw: raw) if opts.store is not None else _cstr
        if by is None:
            return sorted(elements, key=collate, reverse=opts.desc)
        keyed = []
        for element in elements:
            found = _lookup(ctx, by, element)
            keyed.append(((0, b"") if found is None else (1, collate(found)), element))
        keyed.sort(key=lambda pair: pair[0], reverse=opts.desc)
        return [element for _key, element in keyed]
    scored: list[tuple[float, bytes]] = []
    failed = False
    for element in elements:
        if by is None:
            weight: float | None = _weight(element)
        else:
            raw = _lookup(ctx, by, element)
            weight = 0.0 if raw is None else _weight(raw)
        if weight is None:
            failed = True
            weight = 0.0
        scored.append((weight, element))
    if failed:
        raise CommandError(NOT_DOUBLE)
    scored.sort(reverse=opts.desc)
    return [element for _weight_, element in scored]


def _window(length: int, opts: _Options) -> tuple[int, int]:
    """LIMIT as Redis clamps it: the inclusive ``start..end`` of the output (empty when
    end < start)."""
    start = max(opts.limit_start, 0)
    end = length - 1 if opts.limit_count < 0 else start + opts.limit_count - 1
    if start >= length:
        start, end = length - 1, length - 2
    return start, min(end, length - 1)


def _run(ctx: Context, argv: list[bytes], readonly: bool) -> Any:
    opts = _parse(ctx, argv, readonly)
    value = _source(ctx, argv[1])
    if opts.dontsort and value.__class__ is SetValue and (opts.store is not None or in_script(ctx)):
        opts.dontsort, opts.alpha, opts.by = False, True, None  # a set has no order to keep
    elements = _native(value)
    start, end = _window(len(elements), opts)
    if opts.dontsort:
        if opts.desc and value.__class__ is not SetValue:
            elements.reverse()
    else:
        elements = _sorted(ctx, elements, opts)
    chosen = elements[start : end + 1] if end >= start else []
    if opts.gets:
        out = [_lookup(ctx, pattern, element) for element in chosen for pattern in opts.gets]
    else:
        out = chosen  # type: ignore[assignment]
    if opts.store is None:
        return out
    stored = [b"" if item is None else item for item in out]
    if stored:
        ctx.emit(KvPut(opts.store, "list", stored, None))
    elif ctx.db.kv.peek(opts.store, ctx.now_ms) is not None:
        ctx.emit(KvDel([opts.store]))
    return len(stored)


@command("sort", arity=-2, flags="write denyoom", keys=(1, 1, 1), group="generic",
         group_categories=False, acl="@set @sortedset @list @dangerous",
         key_specs=(_SORTED_KEY, _PATTERN_KEYS,
                   key_spec(0, "OW update", unknown=True, notes=_STORE_NOTES, arg="destination")),
         getkeys=sort_keys, since="1.0.0", complexity=_COMPLEXITY)
def sort(ctx: Context, argv: list[bytes]) -> Any:
    """SORT key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] [ASC|DESC] [ALPHA]
        [STORE destination]
    Sorts the elements in a list, a set, or a sorted set, optionally storing the result.
    """
    return _run(ctx, argv, readonly=False)


@command("sort_ro", arity=-2, flags="readonly", keys=(1, 1, 1), group="generic",
         group_categories=False, acl="@set @sortedset @list @dangerous",
         key_specs=(_SORTED_KEY, _PATTERN_KEYS), since="7.0.0", complexity=_COMPLEXITY)
def sort_ro(ctx: Context, argv: list[bytes]) -> Any:
    """SORT_RO key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] [ASC|DESC] [ALPHA]
    Returns the sorted elements of a list, a set, or a sorted set.
    """
    return _run(ctx, argv, readonly=True)
