"""Cluster mode: the Redis Cluster protocol on hotkv nodes (``cluster-enabled yes``).

``attach`` builds this node's ``ClusterState`` from its cluster config file and hands it to
the core, where the dispatch point routes every command with keys through it. The topology
itself comes from the operator tool (``hotkv-cluster``, cluster/tool.py). See
docs/scale-out.md.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from hotkv_server.cluster.state import ClusterState
from hotkv_server.engine.core import InfoSection, Subsystem
from hotkv_server.engine.errors import StartupError
from hotkv_server.engine.settings import Settings
from hotkv_server.engine.topology import TopologyError

if TYPE_CHECKING:
    from hotkv_server.engine.core import Host


class ClusterSubsystem(Subsystem):
    """Keeps the announced address right once the server listens (``--port 0`` included)."""

    def __init__(self, server: Host, state: ClusterState) -> None:
        self.server = server
        self.state = state

    def info_sections(self) -> dict[str, InfoSection]:
        return {"cluster": self.state.info}

    async def started(self) -> None:
        config = self.server.core.config
        self.state.port = config.cluster_announce_port or self.server.core.tcp_port

    def config_changed(self, name: str, value: Any) -> None:
        config = self.server.core.config
        if name == "cluster-require-full-coverage":
            self.state.require_full_coverage = bool(value)
        elif name == "cluster-announce-ip":
            self.state.host = announce_host(config)
        elif name == "cluster-announce-port":
            self.state.port = int(value) or self.server.core.tcp_port


def announce_host(config: Settings) -> str:
    announced = config.cluster_announce_ip
    if announced:
        return announced
    for entry in config.bind:
        host = entry.lstrip("-")
        if host not in ("*", "0.0.0.0", "::", "::1", "::*"):
            return host
    return "127.0.0.1"


def attach(server: Host) -> ClusterSubsystem | None:
    config = server.core.config
    if not config.cluster_enabled:
        return None

    path = config.cluster_config_file
    if not os.path.isabs(path):
        path = os.path.join(config.dir, path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    try:
        state = ClusterState(path, announce_host(config), config.port,
                             config.cluster_require_full_coverage)
    except (TopologyError, OSError) as exc:
        raise StartupError(str(exc)) from None
    core = server.core
    core.cluster = state  # the dispatch point's router and the CLUSTER commands' view
    return ClusterSubsystem(server, state)
