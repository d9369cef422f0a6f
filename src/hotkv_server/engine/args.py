"""An argument cursor and typed converters that raise the exact error replies.

    args = Args(argv, 2)            # start after the command name and the id
    while args:
        opt = args.token()          # upper-cased bytes of the next option
        if opt == b"WINDOW":
            window = args.int("WINDOW", 1, 100_000)
        ...
"""

from __future__ import annotations

import builtins
import math
from typing import Any, Final

from hotkv_server.engine import errors
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.strict_json import JSONRejected, load_object

MAX_ID_LEN = 512
#: the furthest ahead an absolute deadline (PXAT) may lie: 100 years
MAX_AHEAD_MS = 100 * 365 * 86_400_000


#: the canonical spellings of the small integers (LRANGE's 0 and -1, a COUNT, a LIMIT):
#: exactly the strings parse_int accepts for them, answered by one dict lookup
_SMALL_INTS = {b"%d" % i: i for i in range(-1024, 1024)}
_small_int = _SMALL_INTS.get
#: the 64-bit range (Final: compiled, a C constant instead of a power computed per call)
LLONG_MIN: Final = -(2**63)
LLONG_MAX: Final = 2**63 - 1


def parse_int(raw: bytes) -> int | None:
    """A Redis-strict 64-bit integer (no spaces, no '+', no leading zeros), or None."""
    value = _small_int(raw)
    if value is not None:
        return value
    n = len(raw)
    if n == 0 or n > 20:
        return None
    first = raw[0]
    if first == 48 and n > 1:  # '0' followed by more
        return None
    if first == 45 and (n == 1 or raw[1] == 48):  # '-' alone or '-0...'
        return None
    if not (raw.isdigit() or (first == 45 and raw[1:].isdigit())):
        return None
    value = int(raw)
    if n > 18 and (value < LLONG_MIN or value > LLONG_MAX):  # 18 digits always fit
        return None
    return value


def parse_float(raw: bytes) -> float | None:
    """A finite float as Redis's strtold accepts it (also ``inf``), or None."""
    if not raw or raw[0] in b" \t\r\n" or raw[-1] in b" \t\r\n":
        return None
    try:
        value = float(raw)
    except ValueError:
        return None
    if math.isnan(value):
        return None
    return value


class Args:
    """A cursor over ``argv`` from ``start``; every read names the argument it wants."""

    __slots__ = ("argv", "pos")

    def __init__(self, argv: list[bytes], start: int = 1) -> None:
        self.argv = argv
        self.pos = start

    def __bool__(self) -> bool:
        return self.pos < len(self.argv)

    def remaining(self) -> int:
        return len(self.argv) - self.pos

    def peek(self) -> bytes | None:
        return self.argv[self.pos] if self.pos < len(self.argv) else None

    def peek_token(self) -> bytes | None:
        raw = self.peek()
        return raw.upper() if raw is not None else None

    def next(self, name: str) -> bytes:
        """The next raw argument; ``ERR syntax error: NAME needs a value`` if there is none."""
        if self.pos >= len(self.argv):
            raise CommandError(errors.missing_value(name))
        raw = self.argv[self.pos]
        self.pos += 1
        return raw

    def token(self) -> bytes:
        """The next argument upper-cased (an option name)."""
        raw = self.next("option")
        return raw.upper()

    def rest(self) -> list[bytes]:
        out = self.argv[self.pos :]
        self.pos = len(self.argv)
        return out

    def int(self, name: str, lo: int | None = None, hi: int | None = None) -> int:
        raw = self.next(name)
        return to_int(raw, name, lo, hi)

    def float(self, name: str, lo: float | None = None, hi: float | None = None) -> float:
        raw = self.next(name)
        return to_float(raw, name, lo, hi)

    def ident(self, name: str) -> bytes:
        return check_id(self.next(name), name)

    def text(self, name: str) -> bytes:
        return self.next(name)

    def json_object(self, name: str) -> bytes:
        raw = self.next(name)
        check_json_object(raw, name)
        return raw

    def choice(self, name: str, options: tuple[bytes, ...]) -> bytes:
        raw = self.next(name)
        upper = raw.upper()
        if upper not in options:
            allowed = "|".join(o.decode() for o in options)
            raise CommandError(errors.bad_argument(name, f"one of {allowed}", raw))
        return upper

    def only_flag(self, token: bytes) -> bool:
        """The rest of the arguments may be the one flag ``token`` (upper case; named any
        number of times): whether it is there. Anything else is a bad option."""
        given = False
        while self:
            self._only(token)
            given = True
        return given

    def only_option(self, token: bytes) -> bytes | None:
        """The rest of the arguments may be the one option ``token value`` (the last one
        given wins): its value, or None. Anything else is a bad option."""
        value = None
        while self:
            self._only(token)
            value = self.next(token.decode())
        return value

    def _only(self, token: bytes) -> None:
        raw = self.next("option")
        if raw.upper() != token:
            raise CommandError(errors.bad_argument("option", token.decode(), raw))

    def duration_ms(self, option: bytes) -> builtins.int:
        """After a ``TTL`` or ``PX`` token: the duration in ms (positive)."""
        if option == b"TTL" or option == b"EX":
            secs = self.int(option.decode(), 1, 2**47)
            return secs * 1000
        return self.int(option.decode(), 1, 2**47)

    def unix_ms(self, name: str, now_ms: builtins.int) -> builtins.int:
        """After a ``PXAT`` token: an absolute Unix time in ms, from 0 (a past time means
        already expired) up to 100 years from now."""
        return self.int(name, 0, now_ms + MAX_AHEAD_MS)

    def done(self) -> None:
        """Raise ``ERR syntax error`` naming the first unexpected argument, if any."""
        if self.pos < len(self.argv):
            raise CommandError(unexpected(self.argv[self.pos]))


def either(argv: list[bytes], i: int, no: bytes, yes: bytes, error: str) -> bool:
    """An optional argument ``argv[i]``, one of two words in any case (upper-case ``no`` and
    ``yes``): True when it is ``yes``, False when it is ``no`` or absent, else ``error``."""
    if len(argv) <= i:
        return False
    word = argv[i].upper()
    if word != no and word != yes:
        raise CommandError(error)
    return word == yes


def unexpected(raw: bytes) -> str:
    text = raw[:64].decode("utf-8", "replace")
    return f"ERR syntax error: unexpected argument '{text}'"


def to_int(raw: bytes, name: str, lo: int | None = None, hi: int | None = None) -> int:
    value = parse_int(raw)
    if value is None or (lo is not None and value < lo) or (hi is not None and value > hi):
        raise CommandError(errors.bad_argument(name, _range_text("an integer", lo, hi), raw))
    return value


def to_float(raw: bytes, name: str, lo: float | None = None, hi: float | None = None) -> float:
    value = parse_float(raw)
    if (
        value is None
        or math.isinf(value)
        or (lo is not None and value < lo)
        or (hi is not None and value > hi)
    ):
        raise CommandError(errors.bad_argument(name, _range_text("a number", lo, hi), raw))
    return value


def _range_text(kind: str, lo: Any, hi: Any) -> str:
    if lo is not None and hi is not None:
        return f"{kind} {lo}..{hi}"
    if lo is not None:
        return f"{kind} >= {lo}"
    if hi is not None:
        return f"{kind} <= {hi}"
    return kind


def check_id(raw: bytes, name: str) -> bytes:
    if not raw or len(raw) > MAX_ID_LEN:
        raise CommandError(f"ERR invalid {name}: expected 1..{MAX_ID_LEN} bytes, got {len(raw)}")
    return raw


def check_json_object(raw: bytes, name: str) -> Any:
    """Strict JSON (strict_json.py): no NaN/Infinity, at most MAX_DEPTH levels deep."""
    try:
        return load_object(raw)
    except JSONRejected as exc:
        raise CommandError(f"ERR invalid {name}: expected {exc.reason}") from None
