"""The error a command answers with, at the bottom of the import graph.

``CommandError`` lives here (``engine.errors`` re-exports it, with every message) so that
a store can refuse a request itself without importing the engine: the keyspace raises
``WrongTypeError`` when a key holds another type than the command reads, and every place
that turns a ``CommandError`` into an error reply (dispatch, EXEC, scripts) answers it.
"""

from __future__ import annotations

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


class CommandError(Exception):
    """Raised by a handler (or the dispatch point) to answer with an error reply.

    ``message`` is the full reply text without the leading ``-``, e.g.
    ``"ERR syntax error"``; it must be one line.
    """

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message.replace("\r", " ").replace("\n", " ")


class WrongTypeError(CommandError):
    """A key holds another type than the command works on (raised by the keyspace)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(WRONGTYPE)
