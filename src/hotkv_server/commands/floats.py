"""Redis's long-double arithmetic for INCRBYFLOAT and HINCRBYFLOAT.

Redis parses with ``strtold`` and adds in C ``long double`` (80-bit on x86-64), then prints
the sum with ``%.17Lf`` and trims trailing zeros, so ``10.5`` plus ``0.1`` is ``10.6``.
numpy's ``longdouble`` is the same C type and its formatting gives the same digits.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np

#: Redis refuses a number text this long (MAX_LONG_DOUBLE_CHARS)
MAX_CHARS = 5 * 1024
_BLANKS = b" \t\n\v\f\r"
_NONZERO_MANTISSA = re.compile(rb"^[+-]?(0[xX][0-9a-fA-F.]*[1-9a-fA-F]|[0-9.]*[1-9])")


def parse_long_double(raw: bytes) -> Any | None:
    """A ``np.longdouble`` as Redis's ``string2ld`` takes the text, else None: no blanks
    around it, no NUL byte in it, not NaN, no overflow of a finite text to infinity and no underflow of a
    non-zero text to 0 (``1e5000``, ``1e-5000`` are refused; ``inf`` itself is a number)."""
    if not raw or len(raw) >= MAX_CHARS or raw[0] in _BLANKS or b"_" in raw or b"\0" in raw:
        return None  # a NUL would end the C string numpy parses: "1\0x" is not a number
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            value = np.longdouble(raw.decode("ascii"))
    except (ValueError, UnicodeDecodeError):
        return None
    if np.isnan(value):
        return None
    if np.isinf(value) and b"inf" not in raw.lower():
        return None  # strtold's ERANGE on overflow
    if value == 0 and _NONZERO_MANTISSA.match(raw):
        return None  # strtold's ERANGE on underflow to zero
    return value


def is_finite(value: Any) -> bool:
    """Whether a long double is finite (``math.isfinite`` would see ``1e400`` as a double: inf)."""
    return bool(np.isfinite(value))


def format_long_double(value: Any) -> bytes:
    """``%.17Lf`` with trailing zeros (and a bare dot) dropped, as Redis's LD_STR_HUMAN,
    which also writes a negative zero as ``0``."""
    text = np.format_float_positional(value, precision=17, unique=False, trim="-").encode()
    return b"0" if text == b"-0" else text


def add_long_doubles(current: Any, increment: Any) -> Any | None:
    """``current + increment``, or None when the sum is NaN or infinite (Redis refuses it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        total = current + increment
    if np.isnan(total) or np.isinf(total):
        return None
    return total
