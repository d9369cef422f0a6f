"""The options of HSCAN and SSCAN (``MATCH pattern``, ``COUNT count``), as Redis parses them.

SCAN itself (commands/keys.py) also takes ``TYPE``; these two refuse it as a syntax error.
"""

from __future__ import annotations

from hotkv_server.commands.glob import glob_match
from hotkv_server.engine import errors
from hotkv_server.engine.args import parse_int
from hotkv_server.engine.errors import CommandError


def scan_options(argv: list[bytes], start: int) -> tuple[bytes | None, int]:
    """``(pattern or None for any, count)`` from ``argv[start:]``."""
    count = 10
    pattern: bytes | None = None
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
        else:
            raise CommandError(errors.SYNTAX)
        i += 2
    return pattern, count


def matching(names: list[bytes], pattern: bytes | None) -> list[bytes]:
    return names if pattern is None else [name for name in names if glob_match(pattern, name)]
