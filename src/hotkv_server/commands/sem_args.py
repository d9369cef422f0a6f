"""The argument readers of AMEM.SEM.* (``commands/sem.py``, ``commands/search.py``): a
vector (``FP32 blob`` or exactly ``dim`` numbers), a KIND, LIST's cursor.

After the fixed arguments, every argument that reads as a number belongs to the vector, so
too many or too few are ``DIM expected 3 values, got 4`` rather than a syntax error about
the fourth number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from hotkv_server.engine import errors
from hotkv_server.engine.args import Args, parse_float
from hotkv_server.engine.errors import CommandError
from hotkv_server.stores.sem import Namespace

_KIND_RE = re.compile(rb"[a-z0-9_-]{1,32}")
_HEX_RE = re.compile(rb"(?:[0-9a-f]{2})+")
_NAN = frozenset((b"nan", b"+nan", b"-nan"))
_NUMBERISH = re.compile(rb"[+-]?\.?[0-9]")
_VECTOR_DTYPE = np.dtype("<f4")


def vector_number(raw: bytes) -> float | None:
    """A decimal number of a vector (NaN and infinities included, rejected later)."""
    if raw.lower() in _NAN:
        return float("nan")
    if b"_" in raw:  # Python's float() takes 1_000; a vector value does not
        return None
    return parse_float(raw)


def read_vector(args: Args, ns: Namespace) -> bytes:
    """``FP32 blob`` or exactly ``dim`` numbers -> the vector as FP32 little-endian bytes."""
    dim = ns.dim
    first = args.peek()
    if first is not None and first.upper() == b"FP32":
        args.next("FP32")
        if not args:
            raise CommandError(
                f"DIM expected a blob of {4 * dim} bytes ({dim} FP32 values) after FP32, got none"
            )
        blob = args.next("FP32")
        if len(blob) != 4 * dim:
            raise CommandError(
                f"DIM expected a blob of {4 * dim} bytes ({dim} FP32 values), got {len(blob)} bytes"
            )
        vec = np.frombuffer(blob, dtype=_VECTOR_DTYPE)
        if not np.isfinite(vec).all():
            position = int(np.flatnonzero(~np.isfinite(vec))[0]) + 1
            raise CommandError(
                f"DIM invalid vector value {float(vec[position - 1])} at position {position}: "
                "expected a finite number"
            )
    else:
        values: list[float] = []
        raws: list[bytes] = []
        while (raw := args.peek()) is not None:
            value = vector_number(raw)
            if value is None:
                break
            args.next("vector")
            values.append(value)
            raws.append(raw)
        if len(values) < dim and raw is not None and _NUMBERISH.match(raw):
            # a value that starts as a number but is not one is a typo, not a short vector
            raise CommandError(errors.dim_bad_value(raw, len(values) + 1))
        if len(values) != dim:
            raise CommandError(errors.dim_count(dim, len(values)))
        with np.errstate(over="ignore"):
            vec = np.asarray(values, dtype=_VECTOR_DTYPE)
        finite = np.isfinite(vec)
        if not finite.all():
            position = int(np.flatnonzero(~finite)[0]) + 1
            raise CommandError(
                f"DIM invalid vector value '{raws[position - 1].decode('utf-8', 'replace')}' "
                f"at position {position}: expected a finite 32-bit float"
            )
        blob = vec.tobytes()
    if ns.metric == "COSINE" and not vec.any():
        raise CommandError("DIM zero vector: COSINE needs at least one non-zero value")
    return blob


def read_kind(args: Args) -> bytes:
    raw = args.next("KIND")
    if _KIND_RE.fullmatch(raw) is None:
        raise CommandError(errors.bad_argument("KIND", "1..32 characters of a-z 0-9 _ -", raw))
    return raw


@dataclass(slots=True)
class FactFilter:
    """The filters RECALL and SEARCH share: ``KIND kind``, ``MINCONF c``, ``PREFIX p``."""

    kind: bytes | None = None
    minconf: float | None = None
    prefix: bytes | None = None

    def take(self, opt: bytes, args: Args) -> bool:
        """Read the filter the (upper-cased) option ``opt`` names; False when it names none."""
        if opt == b"KIND":
            self.kind = read_kind(args)
        elif opt == b"MINCONF":
            self.minconf = args.float("MINCONF", 0.0, 1.0)
        elif opt == b"PREFIX":
            self.prefix = args.text("PREFIX")
        else:
            return False
        return True


def read_cursor(args: Args) -> bytes | None:
    raw = args.next("CURSOR")
    if raw == b"0":
        return None
    if _HEX_RE.fullmatch(raw) is None:
        raise CommandError(
            errors.bad_argument("CURSOR", "0 or a cursor returned by AMEM.SEM.LIST", raw)
        )
    return bytes.fromhex(raw.decode())


def vector_follows(args: Args) -> bool:
    """Whether the next argument starts a vector (FP32 or a number), not an option."""
    first = args.peek()
    return first is not None and (first.upper() == b"FP32" or vector_number(first) is not None)
