"""Reply value types: what handlers return besides plain Python values.

Handlers return ``bytes``/``str``/``int``/``float``/``None``/lists/dicts/sets and these
types; ``hotkv_server.server.resp`` turns them into RESP2 or RESP3 bytes (the table of how
each encodes is there). They live in the engine so commands and subsystems never import
the network layer.
"""

from __future__ import annotations

from typing import Any


class Simple(str):
    """A RESP simple string (``+OK``). Must not contain CR or LF."""

    __slots__ = ()


class ErrorReply(str):
    """An error inside a reply (EXEC results); top-level errors are raised as CommandError."""

    __slots__ = ()


class Push(list[Any]):
    """An out-of-band push message (MONITOR lines are plain simple strings instead)."""


class OrderedSet(list[Any]):
    """A RESP3 set (``~``) whose members keep this order (COMMAND's flags); RESP2 sees an
    array. A Python ``set`` is encoded in hash order."""


class Verbatim:
    """A RESP3 verbatim string (INFO, CLIENT INFO); RESP2 sees a bulk string."""

    __slots__ = ("fmt", "text")

    def __init__(self, text: str | bytes, fmt: str = "txt") -> None:
        self.text = text.encode() if isinstance(text, str) else text
        self.fmt = fmt


class Raw(bytes):
    """Bytes that are already an encoded reply."""

    __slots__ = ()


class _NullArray:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NULL_ARRAY"


NULL_ARRAY = _NullArray()
OK = Simple("OK")
QUEUED = Simple("QUEUED")
PONG = Simple("PONG")
