"""The expiry and condition options of a write, one parser for every command that takes them.

``EX s | PX ms | EXAT unix-s | PXAT unix-ms | TTL s | KEEPTTL | PERSIST`` (one expiry),
``NX | XX`` (one condition) and ``GET``: SET, GETEX, AMEM.WORK.SET, AMEM.SEM.STORE,
AMEM.CONV.CREATE. Each command says which tokens it takes; the rules are the same for all:
an option may be repeated (the last value wins), two different expiry options or NX with
XX conflict.

Two dialects of errors and checks:

* ``redis=True`` (SET, GETEX): Redis's. A conflict, a missing value or an unknown option
  is ``ERR syntax error``; the value is checked only by ``redis_deadline`` (Redis checks
  GETEX's after it found the key), with ``ERR value is not an integer ...`` and ``ERR
  invalid expire time in 'set' command``.
* otherwise (AMEM.*): hotkv's. A conflict names both options; the value is read and
  checked at once (``TTL``/``PX`` a positive duration, ``PXAT`` a Unix time in ms).
"""

from __future__ import annotations

from hotkv_server.engine import errors
from hotkv_server.engine.args import LLONG_MAX, Args, parse_int
from hotkv_server.engine.errors import CommandError

NX = b"NX"
XX = b"XX"
GET = b"GET"
KEEPTTL = b"KEEPTTL"
PERSIST = b"PERSIST"
#: expiry options followed by a value
VALUED = frozenset({b"EX", b"PX", b"EXAT", b"PXAT", b"TTL"})
#: the ones counted in seconds, and the ones relative to now
_SECONDS = frozenset({b"EX", b"EXAT", b"TTL"})
_RELATIVE = frozenset({b"EX", b"PX", b"TTL"})

#: the sets of tokens the commands take
SET_TOKENS = frozenset({b"EX", b"PX", b"EXAT", b"PXAT", KEEPTTL, NX, XX, GET})
GETEX_TOKENS = frozenset({b"EX", b"PX", b"EXAT", b"PXAT", PERSIST})
AMEM_TTL_TOKENS = frozenset({b"TTL", b"PX", b"PXAT"})


class WriteOptions:
    """The options of one write, read one token at a time by ``take``."""

    __slots__ = ("condition", "expiry", "get", "pxat", "raw", "redis", "tokens", "ttl_ms")

    def __init__(self, tokens: frozenset[bytes], *, redis: bool = False) -> None:
        self.tokens = tokens
        self.redis = redis
        self.expiry: bytes | None = None  # the expiry option given (upper case)
        self.raw: bytes | None = None  # redis: its value, checked by redis_deadline
        self.ttl_ms: int | None = None  # hotkv: TTL or PX, in ms
        self.pxat: int | None = None  # hotkv: PXAT
        self.condition: bytes | None = None  # NX or XX
        self.get = False

    def take(self, opt: bytes, args: Args, now_ms: int) -> bool:
        """Read the option ``opt`` (upper case, already taken from ``args``) and its value;
        False when it is not one of this command's (the caller reports it)."""
        if opt not in self.tokens:
            return False
        if opt in (NX, XX):
            if self.condition is not None and self.condition != opt:
                self._conflict(NX, XX)
            self.condition = opt
        elif opt == GET:
            self.get = True
        else:
            if self.expiry is not None and self.expiry != opt:
                self._conflict(self.expiry, opt)
            self.expiry = opt
            if opt in VALUED:
                if self.redis:
                    if not args:
                        raise CommandError(errors.SYNTAX)
                    self.raw = args.next(opt.decode())
                elif opt == b"PXAT":
                    self.pxat = args.unix_ms("PXAT", now_ms)
                else:
                    self.ttl_ms = args.duration_ms(opt)
        return True

    def take_all(self, args: Args, now_ms: int) -> WriteOptions:
        """Read every argument left, each one of this command's options (SET, GETEX)."""
        while args:
            if not self.take(args.token(), args, now_ms):
                raise CommandError(errors.SYNTAX)
        return self

    def _conflict(self, first: bytes, second: bytes) -> None:
        if self.redis:
            raise CommandError(errors.SYNTAX)
        raise CommandError(errors.exclusive_options(first.decode(), second.decode()))

    def deadline(self, now_ms: int) -> int | None:
        """hotkv: the absolute deadline TTL, PX or PXAT asked for (None: none of them)."""
        if self.ttl_ms is not None:
            return now_ms + self.ttl_ms
        return self.pxat

    def redis_deadline(self, now_ms: int, command: str) -> int | None:
        """redis: the absolute deadline of the EX/PX/EXAT/PXAT value (None: none given)."""
        if self.raw is None or self.expiry is None:
            return None
        return redis_deadline(self.raw, self.expiry, now_ms, command)


def redis_deadline(raw: bytes, option: bytes, now_ms: int, command: str) -> int:
    """The absolute deadline (ms) of an EX/PX/EXAT/PXAT value (SET, SETEX, GETEX ...),
    with Redis's checks; ``command`` is the one the error names."""
    value = parse_int(raw)
    if value is None:
        raise CommandError(errors.NOT_INTEGER)
    seconds = option in _SECONDS
    if value <= 0 or (seconds and value > LLONG_MAX // 1000):
        raise CommandError(errors.invalid_expire(command))
    if seconds:
        value *= 1000
    if option in _RELATIVE:
        value += now_ms
        if value > LLONG_MAX:  # Redis sees the 64-bit sum wrap below zero
            raise CommandError(errors.invalid_expire(command))
    return value
