"""Replication: replicas that follow a primary over the Redis protocol (docs/replication.md).

``attach(server)`` is called by ``hotkv_server.server.app`` at start; it returns the
``Replication`` subsystem (``started``, ``tick``, ``close``) and wires it into the core:
the effect sink, ``INFO replication`` and the replication counters of ``INFO stats``,
the hook that notices closed connections, and ``CONFIG SET repl-backlog-size``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hotkv_server.replication.manager import Replication

if TYPE_CHECKING:
    from hotkv_server.engine.core import Host

__all__ = ["Replication", "attach"]


def attach(server: Host) -> Replication:
    core = server.core
    repl = Replication(server)
    core.replication = repl
    core.effects.set_sink(repl, repl.backlog is not None)  # Replication.backlog keeps it up to date
    core.attach(repl)  # INFO replication and stats, closed connections, CONFIG SET, RESETSTAT
    return repl
