"""Number and range arguments as Redis parses them with C's strtod (scores, timeouts, ranges).

Python's ``float()`` is more lenient than C (``1_000``, surrounding spaces) and stricter
in places (hex floats), so the text is matched against the C grammar first:

* a score (ZADD, ZINCRBY, WEIGHTS) is Redis's ``getDoubleFromObject``: the whole text, no
  leading space, not empty, no overflow to +-inf, no underflow to 0, not NaN;
* a score range end (ZRANGEBYSCORE min max) is ``zslParseRange``: ``(`` for exclusive,
  ``strtod`` must use the whole text (which skips leading spaces and takes ``""`` as 0);
* a lex range end is ``-``, ``+``, or ``[``/``(`` followed by the member;
* a blocking timeout is seconds as a float (``getTimeoutFromObjectOrReply``).
"""

from __future__ import annotations

import math
import re

from hotkv_server.engine.errors import CommandError
from hotkv_server.stores.zsetvalue import LexBound, ScoreRange

NOT_FLOAT = "ERR value is not a valid float"
RANGE_NOT_FLOAT = "ERR min or max is not a float"
LEX_RANGE = "ERR min or max not valid string range item"
TIMEOUT_NOT_FLOAT = "ERR timeout is not a float or out of range"
TIMEOUT_NEGATIVE = "ERR timeout is negative"
LLONG_MAX = 2**63 - 1

_C_SPACE = b" \t\n\v\f\r"
_STRTOD = re.compile(
    rb"[+-]?(?:"
    rb"0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?"
    rb"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    rb"|inf(?:inity)?|nan(?:\([0-9a-zA-Z_]*\))?"
    rb")",
    re.IGNORECASE,
)


#: the common spellings, parsed by float() directly (the same value as strtod's)
_PLAIN = re.compile(rb"-?[0-9]{1,15}(?:\.[0-9]{1,15})?")
_INFINITIES = {b"+inf": math.inf, b"-inf": -math.inf, b"inf": math.inf}


def strtod(raw: bytes) -> tuple[float, int, bool]:
    """C's strtod on ``raw``: (value, bytes consumed, out of range). Nothing parsed is
    (0.0, 0, False), as C returns 0 with the end pointer at the start."""
    start = 0
    while start < len(raw) and raw[start] in _C_SPACE:
        start += 1
    match = _STRTOD.match(raw, start)
    if match is None:
        return 0.0, 0, False
    text = match.group()
    body = text.lstrip(b"+-")
    lowered = body.lower()
    if lowered.startswith(b"0x"):
        if b"p" not in lowered:
            body += b"p0"
        value = float.fromhex(("-" if text.startswith(b"-") else "") + body.decode())
        digits = lowered[2:].split(b"p")[0]
    else:
        try:
            value = float(text.split(b"(")[0])
        except ValueError:  # unreachable for the grammar above, kept as a safe refusal
            return 0.0, 0, False
        digits = lowered.split(b"e")[0]
    out_of_range = False
    if math.isinf(value) and not lowered.startswith(b"inf"):
        out_of_range = True
    elif value == 0.0 and any(48 < c <= 57 or c in b"abcdef" for c in digits.replace(b"x", b"")):
        out_of_range = True  # an underflow to zero
    return value, match.end(), out_of_range


def parse_score(raw: bytes) -> float:
    """A score argument (ZADD, ZINCRBY, WEIGHTS) or ``ERR value is not a valid float``."""
    value = score_or_none(raw)
    if value is None:
        raise CommandError(NOT_FLOAT)
    return value


def score_or_none(raw: bytes) -> float | None:
    if raw.isdigit() and len(raw) < 16:  # the common case, cheaper than the pattern
        return float(raw)
    if _PLAIN.fullmatch(raw) is not None:
        return float(raw)
    if not raw or raw[0] in _C_SPACE:
        return None
    value, used, out_of_range = strtod(raw)
    if used != len(raw) or out_of_range or math.isnan(value):
        return None
    return value


def _range_end(raw: bytes) -> tuple[float, bool]:
    if raw.isdigit() and len(raw) < 16:  # the common case, cheaper than the pattern
        return float(raw), False
    infinite = _INFINITIES.get(raw)
    if infinite is not None:
        return infinite, False
    if _PLAIN.fullmatch(raw) is not None:
        return float(raw), False
    exclusive = raw[:1] == b"("
    text = raw[1:] if exclusive else raw
    value, used, _ = strtod(text)
    if used != len(text) or math.isnan(value):
        raise CommandError(RANGE_NOT_FLOAT)
    return value, exclusive


def parse_score_range(min_raw: bytes, max_raw: bytes) -> ScoreRange:
    lo, lo_ex = _range_end(min_raw)
    hi, hi_ex = _range_end(max_raw)
    return ScoreRange(lo, hi, lo_ex, hi_ex)


def _lex_end(raw: bytes) -> LexBound:
    if raw == b"-":
        return LexBound("-")
    if raw == b"+":
        return LexBound("+")
    if raw[:1] == b"[":
        return LexBound("[", raw[1:])
    if raw[:1] == b"(":
        return LexBound("(", raw[1:])
    raise CommandError(LEX_RANGE)


def parse_lex_range(min_raw: bytes, max_raw: bytes) -> tuple[LexBound, LexBound]:
    return _lex_end(min_raw), _lex_end(max_raw)


def parse_timeout_ms(raw: bytes) -> int:
    """A blocking timeout in seconds -> ms, 0 = forever (Redis rounds up to the next ms)."""
    if not raw or raw[0] in _C_SPACE:
        raise CommandError(TIMEOUT_NOT_FLOAT)
    value, used, out_of_range = strtod(raw)
    if used != len(raw) or out_of_range or math.isnan(value):
        raise CommandError(TIMEOUT_NOT_FLOAT)
    ms = value * 1000.0
    # Redis 7.0 casts to a 64-bit integer: +-inf and anything past LLONG_MAX turn negative
    if not math.isfinite(ms) or ms > LLONG_MAX:
        raise CommandError(TIMEOUT_NEGATIVE)
    whole = math.ceil(ms)
    if whole < 0:
        raise CommandError(TIMEOUT_NEGATIVE)
    return whole
