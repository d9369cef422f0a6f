"""The cluster's shape as one node knows it: nodes, which primary owns which slot, replicas.

Pure data, no I/O: ``ClusterState`` (cluster/state.py) loads and saves it in the node's
cluster config file. hotkv has no gossip: the operator tool (``hotkv-cluster``) computes
the topology and sends the same document to every node (``CLUSTER SETTOPOLOGY``), with a
higher ``epoch`` each time; a node keeps the document with the highest epoch it was given.

The document (JSON)::

    {"epoch": 3,
     "nodes": [{"id": "<40 hex>", "host": "127.0.0.1", "port": 7000,
                "primary": null, "slots": [[0, 5460]]},
               {"id": "...", "host": "127.0.0.1", "port": 7003,
                "primary": "<the primary's id>", "slots": []}]}
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hotkv_server.engine.slots import SLOTS, ranges

ID_LENGTH = 40


class TopologyError(ValueError):
    """A topology document that does not describe a valid cluster."""


@dataclass
class Node:
    id: str
    host: str
    port: int
    primary: str | None = None  # the id of this node's primary when it is a replica
    slots: list[tuple[int, int]] = field(default_factory=list)

    @property
    def is_primary(self) -> bool:
        return self.primary is None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "host": self.host, "port": self.port, "primary": self.primary,
                "slots": [list(r) for r in self.slots]}


@dataclass
class Topology:
    epoch: int = 0
    nodes: dict[str, Node] = field(default_factory=dict)
    #: slot -> id of the primary serving it (None: no owner)
    owners: list[str | None] = field(default_factory=lambda: [None] * SLOTS)

    @classmethod
    def from_json(cls, data: Any) -> Topology:
        if not isinstance(data, dict):
            raise TopologyError("the topology must be a JSON object")
        epoch = data.get("epoch", 0)
        raw_nodes = data.get("nodes", [])
        if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 0:
            raise TopologyError("'epoch' must be an integer >= 0")
        if not isinstance(raw_nodes, list):
            raise TopologyError("'nodes' must be a list")
        topo = cls(epoch=epoch)
        for raw in raw_nodes:
            node = _node_from_json(raw)
            if node.id in topo.nodes:
                raise TopologyError(f"node {node.id} is listed twice")
            topo.nodes[node.id] = node
        for node in topo.nodes.values():
            if node.primary is not None:
                primary = topo.nodes.get(node.primary)
                if primary is None or not primary.is_primary:
                    raise TopologyError(f"node {node.id}: its primary {node.primary} is not a listed primary")
                if node.slots:
                    raise TopologyError(f"node {node.id}: a replica serves no slots of its own")
            for first, last in node.slots:
                for slot in range(first, last + 1):
                    if topo.owners[slot] is not None:
                        raise TopologyError(f"slot {slot} is given to two nodes")
                    topo.owners[slot] = node.id
        return topo

    @classmethod
    def parse(cls, text: str | bytes) -> Topology:
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise TopologyError(f"the topology is not valid JSON: {exc}") from None
        return cls.from_json(data)

    def to_json(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "nodes": [n.to_json() for n in self.nodes.values()]}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"))

    def primaries(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.is_primary]

    def replicas_of(self, node_id: str) -> list[Node]:
        return [n for n in self.nodes.values() if n.primary == node_id]

    def assigned(self) -> int:
        return sum(1 for owner in self.owners if owner is not None)

    def set_owner(self, slots: list[int], node_id: str | None) -> None:
        """Give ``slots`` to ``node_id`` (None: unassign them) and rebuild the nodes' ranges."""
        touched = {self.owners[s] for s in slots} | {node_id}
        for slot in slots:
            self.owners[slot] = node_id
        for nid in touched:
            if nid is not None and nid in self.nodes:
                self.nodes[nid].slots = ranges([s for s, o in enumerate(self.owners) if o == nid])


def _node_from_json(raw: Any) -> Node:
    if not isinstance(raw, dict):
        raise TopologyError("each node must be a JSON object")
    node_id = raw.get("id")
    host = raw.get("host")
    port = raw.get("port")
    primary = raw.get("primary")
    if not isinstance(node_id, str) or len(node_id) != ID_LENGTH or not _is_hex(node_id):
        raise TopologyError(f"node id {node_id!r} is not {ID_LENGTH} hex digits")
    if not isinstance(host, str) or not host:
        raise TopologyError(f"node {node_id}: 'host' must be a non-empty string")
    if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
        raise TopologyError(f"node {node_id}: 'port' must be an integer 1..65535")
    if primary is not None and not isinstance(primary, str):
        raise TopologyError(f"node {node_id}: 'primary' must be a node id or null")
    slots: list[tuple[int, int]] = []
    for item in raw.get("slots", []):
        if (not isinstance(item, list) or len(item) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in item)
                or not 0 <= item[0] <= item[1] < SLOTS):
            raise TopologyError(f"node {node_id}: slot ranges must be [first, last] within 0..{SLOTS - 1}")
        slots.append((item[0], item[1]))
    return Node(node_id, host, port, primary, slots)


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)
