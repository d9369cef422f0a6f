"""``maxmemory-clients``: a cap on the memory all clients' unread replies hold together.

``client-output-buffer-limit normal`` bounds one client; this bounds the sum, so many
clients that each stay under their own limit (a fleet of agents that stopped reading)
still cannot take the server's memory. Ten times a second (the server cron, ``hz``) the
output waiting in every client's transport is added up; while the total is over the cap,
the client holding the most is disconnected (its replies dropped, not sent), as Redis 7's
client eviction does. Replicas and the link to a primary are never evicted (they have
their own ``replica`` limit), nor a client that said ``CLIENT NO-EVICT ON``, nor one with
nothing waiting. Each eviction is a log
line and counts in ``INFO stats`` ``evicted_clients``.

Unlike Redis (where ``maxmemory-clients`` is ``0``, no cap, by default and also counts query
buffers), hotkv ships a cap (``1gb``) and counts output only: a client's input is bounded
on its own (``client-query-buffer-limit``, and reading stops while its output backs up).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from hotkv_server.engine.core import Subsystem

if TYPE_CHECKING:
    from hotkv_server.engine.context import Context
    from hotkv_server.engine.core import Core

log = logging.getLogger("hotkv")


def pending_output(ctx: Context) -> int:
    """Bytes of replies waiting in this client's transport (0 without a connection)."""
    transport = ctx.transport
    if transport is None:
        return 0
    try:
        return int(transport.get_write_buffer_size())
    except (AttributeError, RuntimeError):  # a transport being torn down
        return 0


def evictable(ctx: Context) -> bool:
    return not ctx.is_master_link and "S" not in ctx.flags and "M" not in ctx.flags


class ClientMemoryGuard(Subsystem):
    """Evicts the clients holding the most output while all together pass the cap."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def tick(self) -> None:
        self.evict()

    def evict(self) -> int:
        """One check (the server cron): how many clients were evicted."""
        cap = self.core.config.maxmemory_clients
        if cap <= 0:
            return 0
        exempt = self.core.no_evict_clients
        sizes = [(pending_output(ctx), ctx) for ctx in self.core.clients.values()
                 if evictable(ctx) and ctx.id not in exempt]
        total = sum(size for size, _ in sizes)
        if total <= cap:
            return 0
        evicted = 0
        sizes.sort(key=lambda item: item[0], reverse=True)
        for size, ctx in sizes:
            if total <= cap or size == 0:
                break
            log.warning(
                "evicting client %s: its %d bytes of unread replies put all clients at %d "
                "bytes, over maxmemory-clients %d", ctx.addr, size, total, cap)
            transport = ctx.transport
            if transport is not None:
                transport.abort()  # drop what waits: closing would keep it until sent
            total -= size
            evicted += 1
        self.core.stats.evicted_clients += evicted
        return evicted


def attach(server: Any) -> ClientMemoryGuard:
    """Subsystem hook (``Server._open_subsystems``): ``tick`` runs in the server cron."""
    guard = ClientMemoryGuard(server.core)
    return guard
