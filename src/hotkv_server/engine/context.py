"""Per-connection state that handlers see as ``ctx``: ``Context`` (defined beside ``Core``
in ``hotkv_server.engine.core``, since each refers to the other; importable from here)."""

from __future__ import annotations

from hotkv_server.engine.core import Context

__all__ = ["Context"]
