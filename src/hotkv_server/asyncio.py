"""``hotkv_server.asyncio``: the asyncio client, as ``redis.asyncio`` is to ``redis``."""

from __future__ import annotations

from hotkv_server.clients.aio import Hotkv, Pipeline, from_url
from hotkv_server.clients.errors import AmemError, Conflict, DimensionError, Exists, Full, NotFound

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
