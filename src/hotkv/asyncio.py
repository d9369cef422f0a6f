"""``hotkv.asyncio``: the asyncio client, as ``redis.asyncio`` is to ``redis``."""

from __future__ import annotations

from hotkv.clients.aio import Hotkv, Pipeline, from_url
from hotkv.clients.errors import AmemError, Conflict, DimensionError, Exists, Full, NotFound

__all__ = [
    "AmemError",
    "Conflict",
    "DimensionError",
    "Exists",
    "Full",
    "Hotkv",
    "NotFound",
    "Pipeline",
    "from_url",
]
