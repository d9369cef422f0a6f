"""notify-keyspace-events as bits: Redis's class letters (and hotkv's ``a``), parsed and
written back in Redis 7.0's order. No imports: the configuration and the notifier both
read it."""

from __future__ import annotations

KEYSPACE = 1 << 0  # K
KEYEVENT = 1 << 1  # E
GENERIC = 1 << 2  # g
STRING = 1 << 3  # $
LIST = 1 << 4  # l
SET = 1 << 5  # s
HASH = 1 << 6  # h
ZSET = 1 << 7  # z
EXPIRED = 1 << 8  # x
EVICTED = 1 << 9  # e
STREAM = 1 << 10  # t
KEY_MISS = 1 << 11  # m
MODULE = 1 << 12  # d
NEW = 1 << 13  # n
AMEM = 1 << 14  # a (hotkv's own)
ALL = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE

_LETTERS = {"K": KEYSPACE, "E": KEYEVENT, "g": GENERIC, "$": STRING, "l": LIST, "s": SET,
            "h": HASH, "z": ZSET, "x": EXPIRED, "e": EVICTED, "t": STREAM, "m": KEY_MISS,
            "d": MODULE, "n": NEW, "A": ALL, "a": AMEM}
#: the order Redis 7.0 writes classes back (``A`` stands for all of them; ``n`` is
#: written only without ``A``, as redis-server 7.0 does)
_CLASS_ORDER = "g$lshzxetdn"

def parse_flags(text: str) -> int:
    """``"KEA"`` -> the class bits; ValueError with Redis's message for a bad letter."""
    flags = 0
    for letter in text:
        bit = _LETTERS.get(letter)
        if bit is None:
            raise ValueError("Invalid event class character. Use 'Ag$lshzxeKEtmdna'.")
        flags |= bit
    return flags


def format_flags(flags: int) -> str:
    out = []
    if flags & ALL == ALL:
        out.append("A")
    else:
        out.extend(c for c in _CLASS_ORDER if flags & _LETTERS[c])
    out.extend(c for c in "KEma" if flags & _LETTERS[c])
    return "".join(out)
