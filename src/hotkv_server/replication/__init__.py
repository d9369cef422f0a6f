"""Replication: replicas that follow a primary over the Redis protocol (docs/replication.md).

``attach(server)`` is called by ``hotkv_server.server.app`` at start; it returns the
``Replication`` subsystem (``started``, ``tick``, ``close``) and wires it into the core:
the effect sink, ``INFO replication`` and the replication counters of ``INFO stats``,
the hook that notices closed connections, and ``CONFIG SET repl-backlog-size``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hotkv_server.replication.manager import Replication

if TYPE_CHECKING:
    from hotkv_server.engine.context import Context
    from hotkv_server.engine.core import Host

__all__ = ["Replication", "attach"]


def attach(server: Host) -> Replication:
    core = server.core
    repl = Replication(server)
    core.extras["replication"] = repl
    core.effects.set_sink(repl, repl.backlog is not None)  # Replication.backlog keeps it up to date
    core.info_sections["replication"] = repl.info_replication

    earlier_stats = core.info_sections.get("stats")

    def stats() -> list[tuple[str, Any]]:
        fields = list(earlier_stats()) if earlier_stats is not None else []
        return fields + repl.info_stats()

    core.info_sections["stats"] = stats

    earlier_gone: Callable[[Context], None] | None = core.extras.get("client_gone")

    def client_gone(ctx: Context) -> None:
        if earlier_gone is not None:
            earlier_gone(ctx)
        repl.client_gone(ctx)

    core.extras["client_gone"] = client_gone
    core.extras.setdefault("config_listeners", []).append(repl.config_changed)
    core.extras.setdefault("stat_resetters", []).append(repl.reset_stats)  # CONFIG RESETSTAT
    return repl
