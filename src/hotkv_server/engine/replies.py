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


class Double(float):
    """A score as Redis 7.0 prints it (``%.17g``: ZSCORE 1.1 is ``1.1000000000000001``),
    a RESP3 double or a RESP2 bulk string; plain floats keep the shortest form."""

    __slots__ = ()


class Verbatim:
    """A RESP3 verbatim string (INFO, CLIENT INFO); RESP2 sees a bulk string."""

    __slots__ = ("fmt", "text")

    def __init__(self, text: str | bytes, fmt: str = "txt") -> None:
        self.text = text.encode() if isinstance(text, str) else text
        self.fmt = fmt


class Spliced(list[Any]):
    """EXEC's reply when its commands pushed (subscribed): the pushes sit among the replies
    where each command made them, under an array header counting the commands (``declared``),
    as redis-server writes it (in RESP2 the array then holds more elements than it says)."""

    def __init__(self, items: list[Any], declared: int) -> None:
        super().__init__(items)
        self.declared = declared


class Raw:
    """Bytes that are already an encoded reply (``data``). Not a ``bytes`` itself: the
    encoder joins an array of bytes-like elements as bulk strings without looking at each
    element's type, and a Raw among them must stop that (as a str, an int or None do)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __eq__(self, other: object) -> bool:  # equal to its bytes, as when it was bytes
        if type(other) is Raw:
            return self.data == other.data
        return self.data == other

    def __hash__(self) -> int:
        return hash(self.data)

    def __repr__(self) -> str:
        return f"Raw({self.data!r})"


class _NullArray:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NULL_ARRAY"


NULL_ARRAY = _NullArray()
OK = Simple("OK")
QUEUED = Simple("QUEUED")
PONG = Simple("PONG")
