"""``hotkv_server.asyncio``: the asyncio client, as ``redis.asyncio`` is to ``redis``."""

from __future__ import annotations

from hotkv_server.clients import errors
from hotkv_server.clients.aio import Hotkv, Pipeline, from_url
from hotkv_server.clients.errors import *  # noqa: F403 (its __all__: the error classes)

__all__ = ["Hotkv", "Pipeline", "from_url"]
__all__ += errors.__all__
