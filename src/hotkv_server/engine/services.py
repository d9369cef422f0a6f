"""What the commands may ask of the optional subsystems, as protocols the engine declares.

A subsystem package (persistence, replication ...) implements these; command modules
type against them, so ``commands`` never imports a subsystem package (the import graph
runs server -> engine <- commands, persistence, replication).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from hotkv_server.engine.context import Context


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
