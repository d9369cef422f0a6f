"""What ROLE, INFO replication and INFO stats show of the replication state."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from hotkv_server.engine.core import Core
    from hotkv_server.replication.history import History
    from hotkv_server.replication.primary import Replicas
    from hotkv_server.replication.replica import Follower


class ReplicationState(Protocol):
    """What the views read of the replication subsystem (``replication.manager``)."""

    core: Core
    history: History
    replicas: Replicas
    follower: Follower


def role_reply(repl: ReplicationState) -> list[Any]:
    primary, offset = repl.follower.primary, repl.history.offset
    if primary is None:
        replicas = [[p.ip, str(p.port), str(p.ack_offset)] for p in repl.replicas.peers.values()
                    if p.state == "online"]
        return ["master", offset, replicas]
    link = repl.follower.link
    state_name = link.state if link is not None else "connect"
    return ["slave", primary[0], primary[1], state_name,
            offset if link is not None and link.connected else -1]


def info_replication(repl: ReplicationState) -> list[tuple[str, Any]]:
    """INFO replication with Redis 7's field names."""
    core, history, peers = repl.core, repl.history, repl.replicas.peers
    now = time.monotonic()
    fields: list[tuple[str, Any]] = [("role", "slave" if core.role == "slave" else "master")]
    primary = repl.follower.primary
    if primary is not None:
        link = repl.follower.link
        connected = link is not None and link.connected
        fields += [
            ("master_host", primary[0]),
            ("master_port", primary[1]),
            ("master_link_status", "up" if connected else "down"),
            ("master_last_io_seconds_ago", int(now - link.last_io) if link and connected else -1),
            ("master_sync_in_progress", int(link is not None and link.state == "sync")),
            ("slave_read_repl_offset", history.offset),
            ("slave_repl_offset", history.offset),
        ]
        if link is not None and link.state == "sync":
            left = link.sync_total - link.sync_read
            perc = link.sync_read * 100 / link.sync_total if link.sync_total else 0.0
            fields += [
                ("master_sync_total_bytes", link.sync_total),
                ("master_sync_read_bytes", link.sync_read),
                ("master_sync_left_bytes", left),
                ("master_sync_perc", f"{perc:.2f}"),
                ("master_sync_last_io_seconds_ago", int(now - link.sync_last_io)),
            ]
        if not connected:
            down = link.down_since if link is not None else None
            fields.append(("master_link_down_since_seconds", int(now - down) if down is not None else -1))
        fields += [
            ("slave_priority", core.config.values["replica-priority"]),
            ("slave_read_only", int(bool(core.config.values["replica-read-only"]))),
            ("replica_announced", int(bool(core.config.values["replica-announced"]))),
        ]
    fields.append(("connected_slaves", len(peers)))
    for i, peer in enumerate(peers.values()):
        lag = int(now - peer.ack_time)
        fields.append((f"slave{i}", f"ip={peer.ip},port={peer.port},state={peer.state},"
                                    f"offset={peer.ack_offset},lag={lag}"))
    backlog = history.backlog
    fields += [
        ("master_failover_state", "no-failover"),
        ("master_replid", history.replid),
        ("master_replid2", history.replid2),
        ("master_repl_offset", history.offset),
        ("second_repl_offset", history.second_offset),
        ("repl_backlog_active", int(backlog is not None)),
        ("repl_backlog_size", backlog.size if backlog is not None else core.config.values["repl-backlog-size"]),
        ("repl_backlog_first_byte_offset", backlog.first if backlog is not None else 0),
        ("repl_backlog_histlen", backlog.histlen if backlog is not None else 0),
    ]
    return fields


def info_stats(repl: ReplicationState) -> list[tuple[str, Any]]:
    """Replication counters Redis prints in INFO stats."""
    replicas = repl.replicas
    return [
        ("total_net_repl_input_bytes", repl.follower.net_in),
        ("total_net_repl_output_bytes", replicas.net_out),
        ("sync_full", replicas.sync_full),
        ("sync_partial_ok", replicas.sync_partial_ok),
        ("sync_partial_err", replicas.sync_partial_err),
    ]
