"""Byte ranges of a string, as Redis 7.0: APPEND SETRANGE GETRANGE LCS.

A string may not grow past ``proto-max-bulk-len`` (Redis's checkStringLength). APPEND and
SETRANGE keep the key's deadline and write the whole resulting value as a ``kv.set``.
LCS runs the classic dynamic programme with one numpy row operation per byte of the first
string (a row of the table is the running maximum of the row above, raised by one where
the bytes match), then walks the table back from the end as Redis does, so the matches of
``IDX`` come out in Redis's order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hotkv_server.engine import errors
from hotkv_server.engine.args import parse_int
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import family, key_spec
from hotkv_server.stores.keyspace_effects import KvSet

command = family(group="string")

TOO_BIG = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
OFFSET_RANGE = "ERR offset is out of range"
LCS_NOT_STRINGS = "ERR The specified keys must contain string values"
LCS_LEN_AND_IDX = "ERR If you want both the length and indexes, please just use IDX."
LCS_TOO_BIG = "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"


def _max_len(ctx: Context) -> int:
    limit = ctx.core.config.proto_max_bulk_len
    return limit


@command("append", arity=3, flags="write denyoom fast", key="RW insert")
def append(ctx: Context, argv: list[bytes]) -> Any:
    """APPEND key value
    Appends a string to the value of a key. Creates the key if it doesn't exist.
    """
    key = argv[1]
    kv = ctx.db.kv
    old = kv.get(key, ctx.now_ms)
    if old is None:
        ctx.emit(KvSet(key, argv[2], None))
        return len(argv[2])
    if len(old) + len(argv[2]) > _max_len(ctx):
        raise CommandError(TOO_BIG)
    new = old + argv[2]
    ctx.emit(KvSet(key, new, kv.expiry(key)))
    return len(new)


@command("setrange", arity=4, flags="write denyoom", key="RW update",
         complexity="O(1), not counting the time taken to copy the new string in place. "
                    "Usually, this string is very small so the amortized complexity is O(1). "
                    "Otherwise, complexity is O(M) with M being the length of the value argument.")
def setrange(ctx: Context, argv: list[bytes]) -> Any:
    """SETRANGE key offset value
    Overwrites a part of a string value with another by an offset. Creates the key if it doesn't
    exist.
    """
    offset = parse_int(argv[2])
    if offset is None:
        raise CommandError(errors.NOT_INTEGER)
    if offset < 0:
        raise CommandError(OFFSET_RANGE)
    key, patch = argv[1], argv[3]
    kv = ctx.db.kv
    old = kv.get(key, ctx.now_ms)
    if not patch:  # nothing to write: the length as it is, and no key is created
        return 0 if old is None else len(old)
    if offset + len(patch) > _max_len(ctx):
        raise CommandError(TOO_BIG)
    base = old or b""
    if len(base) < offset:
        base += b"\0" * (offset - len(base))
    new = base[:offset] + patch + base[offset + len(patch):]
    ctx.emit(KvSet(key, new, None if old is None else kv.expiry(key)))
    return len(new)


@command("getrange", arity=4, flags="readonly", key="RO access",
         complexity="O(N) where N is the length of the returned string. The complexity is "
                    "ultimately determined by the returned length, but because creating a "
                    "substring from an existing string is very cheap, it can be considered "
                    "O(1) for small strings.")
def getrange(ctx: Context, argv: list[bytes]) -> Any:
    """GETRANGE key start end
    Returns a substring of the string stored at a key.
    """
    start = parse_int(argv[2])
    end = parse_int(argv[3])
    if start is None or end is None:
        raise CommandError(errors.NOT_INTEGER)
    value = ctx.db.kv.get(argv[1], ctx.now_ms)
    if value is None:
        return b""
    n = len(value)
    if start < 0 and end < 0 and start > end:
        return b""
    if start < 0:
        start = max(n + start, 0)
    if end < 0:
        end = max(n + end, 0)
    end = min(end, n - 1)
    if start > end or n == 0:
        return b""
    return value[start : end + 1]


@command("lcs", arity=-3, flags="readonly", keys=(1, 2, 1),
         key_specs=(key_spec(1, "RO access", lastkey=1, arg="key1 key2"),),
         complexity="O(N*M) where N and M are the lengths of s1 and s2, respectively")
def lcs(ctx: Context, argv: list[bytes]) -> Any:
    """LCS key1 key2 [LEN] [IDX] [MINMATCHLEN min-match-len] [WITHMATCHLEN]
    Finds the longest common substring.
    """
    kv = ctx.db.kv
    now = ctx.now_ms
    a = kv.lookup(argv[1], now)
    b = kv.lookup(argv[2], now)
    # the keys' types are checked before the options, as in Redis
    if (a is not None and not isinstance(a, bytes)) or (b is not None and not isinstance(b, bytes)):
        raise CommandError(LCS_NOT_STRINGS)
    want_len = want_idx = with_match_len = False
    min_match = 0
    i = 3
    while i < len(argv):
        opt = argv[i].lower()
        if opt == b"idx":
            want_idx = True
        elif opt == b"len":
            want_len = True
        elif opt == b"withmatchlen":
            with_match_len = True
        elif opt == b"minmatchlen" and i + 1 < len(argv):
            value = parse_int(argv[i + 1])
            if value is None:
                raise CommandError(errors.NOT_INTEGER)
            min_match = max(value, 0)
            i += 1
        else:
            raise CommandError(errors.SYNTAX)
        i += 1
    if want_idx and want_len:
        raise CommandError(LCS_LEN_AND_IDX)
    a = a or b""
    b = b or b""
    if (len(a) + 1) * (len(b) + 1) > _max_len(ctx) // 4:
        raise CommandError(LCS_TOO_BIG)
    table = _lcs_table(a, b)
    total = int(table[len(a), len(b)])
    if want_len:
        return total
    common, matches = _walk_back(table, a, b, total, min_match, with_match_len)
    if not want_idx:
        return common
    return {b"matches": matches, b"len": total}


def _lcs_table(a: bytes, b: bytes) -> np.ndarray[Any, np.dtype[np.uint32]]:
    """``table[i, j]``: the LCS length of ``a[:i]`` and ``b[:j]``."""
    table = np.zeros((len(a) + 1, len(b) + 1), dtype=np.uint32)
    if not a or not b:
        return table
    bb = np.frombuffer(b, dtype=np.uint8)
    for i in range(1, len(a) + 1):
        above = table[i - 1]
        row = above[1:].copy()
        match = bb == a[i - 1]
        np.maximum(row, np.where(match, above[:-1] + 1, 0), out=row)
        np.maximum.accumulate(row, out=table[i, 1:])
    return table


def _walk_back(table: np.ndarray[Any, np.dtype[np.uint32]], a: bytes, b: bytes, total: int,
               min_match: int, with_match_len: bool) -> tuple[bytes, list[Any]]:
    """The common subsequence and the matched ranges, from the end (Redis's walk)."""
    out = bytearray(total)
    idx = total
    matches: list[Any] = []
    i, j = len(a), len(b)
    none = len(a)  # "no range open"
    a_start = a_end = b_start = b_end = none
    while i > 0 and j > 0:
        emit = False
        if a[i - 1] == b[j - 1]:
            out[idx - 1] = a[i - 1]
            if a_start == none:
                a_start = a_end = i - 1
                b_start = b_end = j - 1
            elif a_start == i and b_start == j:
                a_start -= 1
                b_start -= 1
            else:
                emit = True
            if a_start == 0 or b_start == 0:
                emit = True
            idx -= 1
            i -= 1
            j -= 1
        else:
            if table[i - 1, j] > table[i, j - 1]:
                i -= 1
            else:
                j -= 1
            if a_start != none:
                emit = True
        if emit:
            length = a_end - a_start + 1
            if min_match == 0 or length >= min_match:
                match: list[Any] = [[a_start, a_end], [b_start, b_end]]
                if with_match_len:
                    match.append(length)
                matches.append(match)
            a_start = none
    return bytes(out), matches
