"""What the commands may ask of the optional subsystems, as protocols the engine declares.

A subsystem package (persistence, replication ...) implements these; command modules
type against them, so ``commands`` never imports a subsystem package (the import graph
runs server -> engine <- commands, persistence, replication).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from hotkv_server.engine.context import Context
    from hotkv_server.engine.topology import Node, Topology


class ReplicationService(Protocol):
    """``hotkv_server.replication.manager.Replication`` as REPLICAOF, ROLE, WAIT, REPLCONF,
    PSYNC and SYNC use it."""

    #: the primary followed, or None on a primary
    primary: tuple[str, int] | None

    def replicaof(self, host: str, port: int, *, at_start: bool = False) -> None: ...

    def promote(self) -> None: ...

    def role_reply(self) -> list[Any]: ...

    def wait(self, ctx: Context, numreplicas: int, timeout_ms: int) -> Any: ...

    def replconf(self, ctx: Context, argv: list[bytes]) -> Any: ...

    def psync(self, ctx: Context, replid: str, offset: int | None) -> Any: ...


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
