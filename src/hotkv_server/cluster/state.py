"""One node's part of a cluster: its id, the topology it was given, and command routing.

``route`` is what the dispatch point asks before running a command with keys when
``cluster-enabled`` is on: it answers None (run it here) or the redirection or refusal a
cluster node gives (``-MOVED``, ``-ASK``, ``-CROSSSLOT``, ``-TRYAGAIN``, ``-CLUSTERDOWN``),
as Redis's getNodeByQuery decides. Slot migration state (``SETSLOT ... MIGRATING`` /
``IMPORTING``) is this node's own, as in Redis, and is kept in the config file too.
"""

from __future__ import annotations

import json
import logging
import os
from typing import TYPE_CHECKING, Any

from hotkv_server.engine.slots import SLOTS, key_slot
from hotkv_server.engine.topology import Node, Topology, TopologyError
from hotkv_server.persistence.fsutil import atomic_write

if TYPE_CHECKING:
    from hotkv_server.engine.context import Context
    from hotkv_server.engine.registry import CommandSpec

log = logging.getLogger("hotkv")

CROSSSLOT = "CROSSSLOT Keys in request don't hash to the same slot"
TRYAGAIN = "TRYAGAIN Multiple keys request during rehashing of slot"
DOWN_UNBOUND = "CLUSTERDOWN Hash slot not served"
DOWN = "CLUSTERDOWN The cluster is down"


class ClusterState:
    """The cluster subsystem of one server (``core.cluster``)."""

    def __init__(self, path: str, host: str, port: int, require_full_coverage: bool = True) -> None:
        self.path = path
        self.host = host
        self.port = port
        self.require_full_coverage = require_full_coverage
        self.myid = os.urandom(20).hex()
        self.topology = Topology()
        #: slot -> node id: slots this node is moving out / taking in (SETSLOT)
        self.migrating: dict[int, str] = {}
        self.importing: dict[int, str] = {}
        self.load()

    # --- the config file ------------------------------------------------------------------
    def load(self) -> None:
        try:
            with open(self.path, "rb") as fh:
                data = json.loads(fh.read())
        except FileNotFoundError:
            self.save()
            return
        except (OSError, ValueError) as exc:
            raise TopologyError(f"cannot read the cluster config file {self.path}: {exc}") from None
        if not isinstance(data, dict) or not isinstance(data.get("myid"), str):
            raise TopologyError(f"the cluster config file {self.path} has no 'myid'")
        self.myid = data["myid"]
        self.topology = Topology.from_json(data.get("topology", {}))
        self.migrating = {int(k): v for k, v in data.get("migrating", {}).items()}
        self.importing = {int(k): v for k, v in data.get("importing", {}).items()}

    def reset(self, hard: bool) -> None:
        """CLUSTER RESET: forget the topology and migration marks (HARD: a new id too)."""
        self.topology = Topology()
        self.migrating.clear()
        self.importing.clear()
        if hard:
            self.myid = os.urandom(20).hex()
        self.save()

    def save(self) -> None:
        data = {"myid": self.myid, "topology": self.topology.to_json(),
                "migrating": {str(k): v for k, v in self.migrating.items()},
                "importing": {str(k): v for k, v in self.importing.items()}}
        atomic_write(self.path, json.dumps(data, indent=1).encode())

    # --- the topology ------------------------------------------------------------------------
    def me(self) -> Node:
        """This node as the topology lists it (a lone primary with no slots before any)."""
        node = self.topology.nodes.get(self.myid)
        if node is None:
            node = Node(self.myid, self.host, self.port)
        return node

    def set_topology(self, topo: Topology) -> None:
        self.topology = topo
        # a slot that now belongs to its destination is no longer in flight
        for slot, dest in list(self.migrating.items()):
            if topo.owners[slot] == dest:
                del self.migrating[slot]
        for slot in list(self.importing):
            if topo.owners[slot] == self.myid:
                del self.importing[slot]
        self.save()

    def state_ok(self) -> bool:
        return not self.require_full_coverage or self.topology.assigned() == SLOTS

    def primary_of_me(self) -> str:
        """The id of the primary whose slots this node serves (itself when a primary)."""
        me = self.topology.nodes.get(self.myid)
        if me is not None and me.primary is not None:
            return me.primary
        return self.myid

    def address_of(self, node_id: str) -> str:
        node = self.topology.nodes.get(node_id)
        return node.address if node is not None else "?:0"

    # --- routing -------------------------------------------------------------------------------
    @staticmethod
    def keys_of(spec: CommandSpec, argv: list[bytes]) -> list[bytes]:
        """The keys a call is routed by."""
        return spec.keys_of(argv)

    def route(self, ctx: Context, spec: CommandSpec, keys: list[bytes], asking: bool = False) -> str | None:
        """None to run the command here, else the error reply that redirects or refuses it."""
        slot = key_slot(keys[0])
        for key in keys[1:]:
            if key_slot(key) != slot:
                return CROSSSLOT
        return self.route_slot(ctx, spec, slot, keys, asking)

    def route_slot(self, ctx: Context, spec: CommandSpec, slot: int, keys: list[bytes],
                   asking: bool = False) -> str | None:
        owner = self.topology.owners[slot]
        if owner is None:
            return DOWN_UNBOUND
        if not self.state_ok():
            return DOWN
        serving = self.primary_of_me()
        if owner == serving:
            if owner == self.myid:
                dest = self.migrating.get(slot)
                if dest is not None and spec.name not in ("migrate", "dump"):
                    missing = self._missing(ctx, keys)
                    if missing == len(keys):
                        return f"ASK {slot} {self.address_of(dest)}"
                    if missing:
                        return TRYAGAIN
                return None
            # a replica serves reads of its primary's slots to READONLY clients
            if ctx.cluster_readonly and not spec.is_write:
                return None
            return f"MOVED {slot} {self.address_of(owner)}"
        source = self.importing.get(slot)
        if source is not None and (asking or "asking" in spec.flags):
            missing = self._missing(ctx, keys)
            if missing and len(keys) > 1:
                return TRYAGAIN
            return None
        if ctx.cluster_readonly and not spec.is_write and owner in self._my_primaries():
            return None
        return f"MOVED {slot} {self.address_of(owner)}"

    def _my_primaries(self) -> set[str]:
        me = self.topology.nodes.get(self.myid)
        return {me.primary} if me is not None and me.primary is not None else set()

    @staticmethod
    def _missing(ctx: Context, keys: list[bytes]) -> int:
        now = ctx.core.clock.now_ms()
        stores = ctx.core.db.stores.values()
        return sum(1 for key in keys if not any(store.exists(key, now) for store in stores))

    # --- keys of a slot ------------------------------------------------------------------------
    def ids_in_slot(self, ctx: Context, slot: int) -> list[bytes]:
        """Every live id of every store that hashes to ``slot`` (each id once), sorted."""
        now = ctx.now_ms
        found: set[bytes] = set()
        for store in ctx.core.db.stores.values():
            for ident in store.ids(now):
                if key_slot(ident) == slot:
                    found.add(ident)
        return sorted(found)

    def info(self) -> list[tuple[str, Any]]:
        return [("cluster_enabled", 1)]
