"""What the commands may ask of the optional subsystems, as protocols the engine declares.

A subsystem package (persistence, replication ...) implements these; command modules
type against them (the two the engine itself holds, ``core.persistence`` and
``core.replication``, are declared beside Core in ``engine/core.py``), so ``commands`` never imports a subsystem package (the import graph
runs server -> engine <- commands, persistence, replication).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from hotkv_server.engine.core import PersistenceService, ReplicationService

__all__ = ["ClusterService", "EmbedDone", "EmbeddingService", "PersistenceService",
           "ReplicationService"]

if TYPE_CHECKING:
    from hotkv_server.engine.context import Context
    from hotkv_server.engine.topology import Node, Topology


class ClusterService(Protocol):
    """``hotkv_server.cluster.state.ClusterState`` as the CLUSTER commands, ASKING,
    READONLY and MIGRATE use it (the topology itself is ``engine.topology.Topology``)."""

    myid: str
    topology: Topology
    migrating: dict[int, str]
    importing: dict[int, str]

    def me(self) -> Node: ...

    def state_ok(self) -> bool: ...

    def set_topology(self, topo: Topology) -> None: ...

    def ids_in_slot(self, ctx: Context, slot: int) -> list[bytes]: ...

    def migrating_changed(self) -> None: ...

    def reset(self, hard: bool) -> None: ...

    def save(self) -> None: ...

    def save_soon(self) -> None: ...


#: ``done(vectors, None)`` with an FP32 blob per text, or ``done(None, error reply text)``
EmbedDone = Callable[[dict[bytes, bytes] | None, str | None], None]


class EmbeddingService(Protocol):
    """``hotkv_server.embedding.service.EmbeddingService`` as AMEM.SEM.* use it
    (``core.extras["embed"]``; commands/embed.py turns it into deferred replies)."""

    def dimension(self, name: str) -> int | None:
        """The vector length of the configured embedder ``name``; None if there is none."""

    def names(self) -> str:
        """The configured embedders, for error messages ("wordllama, openai" or "none")."""

    def lookup(self, name: str, texts: list[bytes]) -> list[bytes | None]:
        """The cached vector of each text (a hit or a miss counted); None for one not
        cached or on its way (embedded ahead)."""

    def running(self) -> bool:
        """Whether :meth:`embed` can work off the loop (a running loop, an open pool)."""

    def embed(self, name: str, texts: list[bytes], done: EmbedDone) -> None:
        """Embed ``texts`` on the worker pool (waiting for the ones on their way); ``done``
        runs once on the loop thread, with the vectors or the error (the deadline
        ``embed-timeout-ms`` included)."""

    def embed_now(self, name: str, texts: list[bytes]) -> dict[bytes, bytes]:
        """Embed in place (no running loop); ValueError with the error reply text."""

    def prefetch(self, name: str, text: bytes) -> None:
        """Start embedding ``text`` for a command that will need it; its vector lands in
        the cache."""
