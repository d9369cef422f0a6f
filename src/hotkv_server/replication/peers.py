"""The replicas attached to a primary, as the primary side keeps them."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hotkv_server.engine.context import Context


@dataclass
class Peer:
    """A replica attached to this server (its connection came in through PSYNC or SYNC)."""

    ctx: Context
    transport: asyncio.Transport
    ip: str
    port: int  # REPLCONF listening-port
    capa: set[str]
    state: str = "send_bulk"  # Redis's wait_bgsave / send_bulk / online
    ack_offset: int = 0
    ack_time: float = field(default_factory=time.monotonic)
    written: int = 0  # bytes this module wrote to the transport
    bulk_end: int = 0  # ``written`` right after the snapshot (its bytes are not "output buffer")
    soft_since: float = 0.0


@dataclass
class Handshake:
    """What a connection told us with REPLCONF before its PSYNC."""

    port: int = 0
    ip: str = ""
    capa: set[str] = field(default_factory=set)


def count_acked(peers: dict[int, Peer], target: int) -> int:
    """Online replicas that acknowledged the stream up to ``target``."""
    return sum(1 for p in peers.values() if p.state == "online" and p.ack_offset >= target)
