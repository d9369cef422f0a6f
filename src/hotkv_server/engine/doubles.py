"""The text of a double as Redis 7 prints it in a reply: ``encode_double``'s shortest form
(a float reply) and ``format_double``'s ``%.17g`` (a score). Compiled with the hot path
(``_compiled.MODULES``): ZRANGE ... WITHSCORES formats one per member."""

from __future__ import annotations

import math


def encode_double(value: float) -> bytes:
    """The text of a double as Redis 7 prints it (``inf``, ``-inf``, ``nan``, else repr)."""
    if math.isinf(value):
        return b"inf" if value > 0 else b"-inf"
    if math.isnan(value):
        return b"nan"
    if value == int(value) and abs(value) < 1e17:
        return b"%d" % int(value)
    return repr(value).encode()


def format_double(value: float) -> bytes:
    """Redis 7.0's ``%.17g`` text of a double, with ``inf``/``-inf``/``nan``. An integral
    score below 1e17 (at most 17 digits: ``%.17g`` prints them all) is written as the
    integer, the same text several times faster than the float formatting; -0.0 keeps
    its ``-0``."""
    if -1e17 < value < 1e17 and value == int(value) and (value or math.copysign(1.0, value) > 0):
        return b"%d" % int(value)
    if math.isinf(value):
        return b"inf" if value > 0 else b"-inf"
    if math.isnan(value):
        return b"nan"
    return b"%.17g" % value
