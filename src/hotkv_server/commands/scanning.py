"""The options of SCAN, HSCAN, SSCAN and ZSCAN (``MATCH pattern``, ``COUNT count``), as Redis
parses them; SCAN also takes ``TYPE``, the others refuse it as a syntax error.
"""

from __future__ import annotations

from hotkv_server.commands.glob import glob_match
from hotkv_server.engine import errors
from hotkv_server.engine.args import parse_int
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import SpecFields

#: the spec HSCAN, SSCAN and ZSCAN share
ELEMENT_SCAN = SpecFields(arity=-3, flags="readonly", key="RO access",
                          tips="nondeterministic_output",
                          complexity="O(1) for every call. O(N) for a complete iteration, including "
                                     "enough command calls for the cursor to return back to 0. N is "
                                     "the number of elements inside the collection.")


def scan_options(argv: list[bytes], start: int) -> tuple[bytes | None, int]:
    """``(pattern or None for any, count)`` from ``argv[start:]`` (HSCAN, SSCAN, ZSCAN)."""
    pattern, count, _ = _read_options(argv, start, with_type=False)
    return pattern, count


def scan_options_with_type(argv: list[bytes], start: int) -> tuple[bytes | None, int, bytes | None]:
    """SCAN's: ``(pattern, count, type name lower-cased or None)``."""
    return _read_options(argv, start, with_type=True)


def _read_options(argv: list[bytes], start: int, *, with_type: bool) -> tuple[bytes | None, int, bytes | None]:
    count = 10
    pattern: bytes | None = None
    type_name: bytes | None = None
    i = start
    n = len(argv)
    while i < n:
        if i + 1 >= n:
            raise CommandError(errors.SYNTAX)
        opt = argv[i].lower()
        if opt == b"count":
            value = parse_int(argv[i + 1])
            if value is None:
                raise CommandError(errors.NOT_INTEGER)
            if value < 1:
                raise CommandError(errors.SYNTAX)
            count = value
        elif opt == b"match":
            pattern = None if argv[i + 1] == b"*" else argv[i + 1]
        elif opt == b"type" and with_type:
            type_name = argv[i + 1].lower()
        else:
            raise CommandError(errors.SYNTAX)
        i += 2
    return pattern, count, type_name


def matching(names: list[bytes], pattern: bytes | None) -> list[bytes]:
    return names if pattern is None else [name for name in names if glob_match(pattern, name)]
