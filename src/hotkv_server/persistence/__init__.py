"""Persistence: the append-only file of effects, base snapshots, rewrites and loading.

The server imports this package and calls ``attach(server)`` before it listens (see
``hotkv_server.server.app``). Files: ``framing`` (record frames with CRCs), ``manifest`` (file
layout), ``snapshot`` (base file format), ``aof`` (appending and fsync), ``loader``
(replay), ``rewrite`` (the forked child), ``manager`` (the running subsystem, the facade), ``writer`` (its AOF write path), ``jobs`` (its manifest, forked rewrites and SAVE), ``check``
(the ``hotkv-check-aof`` tool). The format is described in docs/persistence.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hotkv_server.persistence.manager import Persistence

if TYPE_CHECKING:
    from hotkv_server.engine.core import Host

__all__ = ["Persistence", "attach"]


def attach(server: Host) -> Persistence:
    """Check the data directory, register the hooks, and mark the server as loading."""
    persistence = Persistence(server)
    persistence.prepare()
    return persistence
