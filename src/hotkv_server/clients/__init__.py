"""Clients of hotkv: the redis-py based ``Hotkv`` client (sync and asyncio), the MCP
server (``hotkv-memory-mcp``) and the container health check."""

from __future__ import annotations

from hotkv_server.clients import errors
from hotkv_server.clients.errors import *  # noqa: F403 (its __all__: the error classes)
from hotkv_server.clients.sync import Hotkv, Pipeline, from_url
from hotkv_server.clients.vectors import from_fp32, to_fp32

__all__ = ["Hotkv", "Pipeline", "from_fp32", "from_url", "to_fp32"]
__all__ += errors.__all__
