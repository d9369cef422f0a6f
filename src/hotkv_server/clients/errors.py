"""The hotkv error replies as typed exceptions, and the redis-py parsers that raise them.

redis-py turns an error reply into an exception in its parser (``BaseParser.parse_error``),
choosing the class by the reply's first word through ``EXCEPTION_CLASSES``. The hotkv
parsers below are the redis-py parsers with that table extended by the memory codes, so an
error is typed where it is read: in a plain call, a pipeline and inside ``EXEC`` alike. As
for every mapped code, redis-py strips the code from the message (``str(exc)`` is the text
after ``NOTFOUND``) and keeps it in ``exc.status_code``.
"""

from __future__ import annotations

import re
from typing import Any

from redis._parsers import (
    _AsyncHiredisParser,
    _AsyncRESP3Parser,
    _HiredisParser,
    _RESP3Parser,
)
from redis.exceptions import ResponseError
from redis.utils import HIREDIS_AVAILABLE

#: the error classes, which the clients' modules (``hotkv_server``, ``hotkv_server.asyncio``)
#: export with their own names; the parsers are the clients' own (sync.py, aio.py)
__all__ = ["AmemError", "Conflict", "DimensionError", "Exists", "Full", "NotFound"]


class AmemError(ResponseError):
    """An error reply with one of the memory codes (NOTFOUND, EXISTS, DIM, FULL, CONFLICT)."""


class NotFound(AmemError):
    """``NOTFOUND``: the command needs an object that does not exist."""


class Exists(AmemError):
    """``EXISTS``: creating an object that exists (without ``update=True``)."""


class DimensionError(AmemError):
    """``DIM``: a vector of the wrong length, NaN/infinity, or a zero vector under COSINE."""


class Full(AmemError):
    """``FULL``: a semantic namespace at its capacity with ``EVICT NONE``."""


class Conflict(AmemError):
    """``CONFLICT``: ``ifversion`` did not match the summary's current version."""

    _VERSION = re.compile(r"is at version (\d+)")

    @property
    def current_version(self) -> int | None:
        """The version the server reported, when the message names one."""
        match = self._VERSION.search(str(self))
        return int(match.group(1)) if match else None


#: reply code -> exception class, added to redis-py's own table
AMEM_EXCEPTION_CLASSES: dict[str, type[AmemError]] = {
    "NOTFOUND": NotFound,
    "EXISTS": Exists,
    "DIM": DimensionError,
    "FULL": Full,
    "CONFLICT": Conflict,
}


def _extended(table: dict[str, Any]) -> dict[str, Any]:
    return {**table, **AMEM_EXCEPTION_CLASSES}


# hiredis reads both protocols; the pure-Python fallback is the RESP3 parser, which also
# reads RESP2 replies (RESP2 is a subset of RESP3 on the wire). Choosing a parser that
# fits both protocols matters: redis-py swaps a RESP2 parser for its own RESP3 one during
# the HELLO handshake, which would drop the extended table.
_SyncBase: type[Any] = _HiredisParser if HIREDIS_AVAILABLE else _RESP3Parser
_AsyncBase: type[Any] = _AsyncHiredisParser if HIREDIS_AVAILABLE else _AsyncRESP3Parser


class HotkvParser(_SyncBase):
    """redis-py's parser (hiredis when installed) raising the hotkv exceptions."""

    EXCEPTION_CLASSES = _extended(_SyncBase.EXCEPTION_CLASSES)


class AsyncHotkvParser(_AsyncBase):
    """The asyncio twin of :class:`HotkvParser`."""

    EXCEPTION_CLASSES = _extended(_AsyncBase.EXCEPTION_CLASSES)
