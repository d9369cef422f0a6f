"""``hotkv-cluster``: the operator's tool that sets a hotkv cluster's topology.

hotkv nodes have no gossip bus and elect nothing. This tool talks to every node over the
ordinary protocol, decides the topology (which primary serves which slots, which node
replicates which), makes replicas follow their primaries (``REPLICAOF``) and sends the same
topology document to every node (``CLUSTER SETTOPOLOGY``) with a higher epoch each time.

    hotkv-cluster create 127.0.0.1:7000 127.0.0.1:7001 127.0.0.1:7002 [--replicas 1]
    hotkv-cluster add-node 127.0.0.1:7003 127.0.0.1:7000 [--replica-of NODE-ID]
    hotkv-cluster reshard 127.0.0.1:7000 --from NODE-ID --to NODE-ID --slots 100
    hotkv-cluster check 127.0.0.1:7000

Every subcommand takes ``--password`` / ``--user`` for nodes that need AUTH. Failover of a
shard is Sentinel's job (docs/scale-out.md); its client-reconfig script calls
``hotkv-cluster promote``, which rewrites the topology so the promoted replica owns the slots.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import redis

from hotkv_server.engine.slots import SLOTS
from hotkv_server.engine.topology import Node, Topology, TopologyError


class ToolError(RuntimeError):
    """What the tool tells the operator before it exits with status 1."""


def parse_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ToolError(f"address '{text}': expected HOST:PORT")
    return host, int(port)


class Cluster:
    """Connections to the nodes, by address."""

    def __init__(self, user: str | None, password: str | None) -> None:
        self.user = user
        self.password = password
        self.conns: dict[str, redis.Redis] = {}

    def conn(self, address: str) -> redis.Redis:
        found = self.conns.get(address)
        if found is None:
            host, port = parse_address(address)
            found = redis.Redis(host=host, port=port, username=self.user, password=self.password,
                                socket_timeout=60, decode_responses=True)
            self.conns[address] = found
        return found

    def call(self, address: str, *args: Any) -> Any:
        try:
            return self.conn(address).execute_command(*args)
        except redis.RedisError as exc:
            raise ToolError(f"{address}: {' '.join(map(str, args[:2]))}: {exc}") from None

    def myid(self, address: str) -> str:
        return str(self.call(address, "CLUSTER", "MYID"))

    def topology(self, address: str) -> Topology:
        try:
            return Topology.parse(self.call(address, "CLUSTER", "TOPOLOGY"))
        except TopologyError as exc:
            raise ToolError(f"{address}: {exc}") from None

    def publish(self, topo: Topology, *, tolerate: Sequence[str] = ()) -> list[str]:
        """Send ``topo`` to every node it lists; a node in ``tolerate`` (a failed primary) may
        be unreachable: it learns the topology from its new primary when it rejoins as a
        replica. Returns the addresses that could not be told."""
        text = topo.dumps()
        missed: list[str] = []
        for node in topo.nodes.values():
            try:
                self.call(node.address, "CLUSTER", "SETTOPOLOGY", text)
            except ToolError:
                if node.address not in tolerate:
                    raise
                missed.append(node.address)
        return missed


def spread(primaries: list[Node]) -> None:
    """Give the 16384 slots to ``primaries`` in contiguous, nearly equal runs."""
    count = len(primaries)
    for i, node in enumerate(primaries):
        first = SLOTS * i // count
        last = SLOTS * (i + 1) // count - 1
        node.slots = [(first, last)]


def create(cluster: Cluster, addresses: list[str], replicas: int) -> Topology:
    if replicas < 0:
        raise ToolError("--replicas: expected an integer >= 0")
    if len(addresses) < 1 + replicas or len(addresses) % (1 + replicas):
        raise ToolError(f"{len(addresses)} nodes cannot form shards of 1 primary and {replicas} replicas")
    if len(set(addresses)) != len(addresses):
        raise ToolError("a node address is given twice")
    epoch = 0
    nodes: list[Node] = []
    for address in addresses:
        host, port = parse_address(address)
        node_id = cluster.myid(address)
        current = cluster.topology(address)
        if current.assigned():
            raise ToolError(f"{address} already serves slots (run CLUSTER RESET on it first)")
        epoch = max(epoch, current.epoch)
        nodes.append(Node(node_id, host, port))
    shards = len(addresses) // (1 + replicas)
    primaries, others = nodes[:shards], nodes[shards:]
    spread(primaries)
    for i, node in enumerate(others):
        node.primary = primaries[i % shards].id
    topo = Topology.from_json({"epoch": epoch + 1, "nodes": [n.to_json() for n in nodes]})
    follow_primaries(cluster, topo)
    cluster.publish(topo)
    return topo


def follow_primaries(cluster: Cluster, topo: Topology) -> None:
    """Make each replica replicate its primary, and each primary replicate nobody."""
    for node in topo.nodes.values():
        if node.primary is None:
            cluster.call(node.address, "REPLICAOF", "NO", "ONE")
        else:
            primary = topo.nodes[node.primary]
            cluster.call(node.address, "REPLICAOF", primary.host, str(primary.port))


def add_node(cluster: Cluster, new: str, existing: str, replica_of: str | None) -> Topology:
    topo = cluster.topology(existing)
    host, port = parse_address(new)
    node_id = cluster.myid(new)
    if node_id in topo.nodes:
        raise ToolError(f"{new} ({node_id}) is already in the cluster")
    if replica_of is not None and replica_of not in topo.nodes:
        raise ToolError(f"--replica-of: no node {replica_of} in the cluster")
    data = topo.to_json()
    data["epoch"] += 1
    data["nodes"].append(Node(node_id, host, port, replica_of).to_json())
    updated = Topology.from_json(data)
    if replica_of is not None:
        primary = updated.nodes[replica_of]
        cluster.call(new, "REPLICAOF", primary.host, str(primary.port))
    cluster.publish(updated)
    return updated


def promote(cluster: Cluster, existing: str, new_primary: str) -> Topology:
    """The replica at ``new_primary`` (HOST:PORT) takes over its primary's slots."""
    topo = cluster.topology(existing)
    host, port = parse_address(new_primary)
    chosen = next((n for n in topo.nodes.values() if (n.host, n.port) == (host, port)), None)
    if chosen is None:
        raise ToolError(f"{new_primary} is not a node of the cluster")
    if chosen.primary is None:
        return topo  # already a primary: nothing to do
    old = topo.nodes[chosen.primary]
    data = topo.to_json()
    data["epoch"] += 1
    for raw in data["nodes"]:
        if raw["id"] == chosen.id:
            raw["primary"], raw["slots"] = None, [list(r) for r in old.slots]
        elif raw["id"] == old.id:
            raw["primary"], raw["slots"] = chosen.id, []
        elif raw["primary"] == old.id:
            raw["primary"] = chosen.id
    updated = Topology.from_json(data)
    missed = cluster.publish(updated, tolerate=[old.address])
    for address in missed:
        print(f"[WARN] {address} is unreachable; it takes the topology from its primary when it returns",
              file=sys.stderr)
    return updated


def reshard(cluster: Cluster, existing: str, source_id: str, target_id: str, count: int,
            batch: int = 100, timeout_ms: int = 10000) -> tuple[Topology, int]:
    """Move ``count`` slots (the highest the source serves) and every object in them from
    the source primary to the target primary while clients keep working: the slots are
    marked IMPORTING on the target and MIGRATING on the source (clients get -ASK for what
    has moved), their objects go over with MIGRATE in batches, then the new topology is
    sent to the target first, the source next, then every other node. Returns the new
    topology and how many objects moved."""
    topo = cluster.topology(existing)
    source, target = topo.nodes.get(source_id), topo.nodes.get(target_id)
    if source is None or not source.is_primary:
        raise ToolError(f"--from: {source_id} is not a primary of the cluster")
    if target is None or not target.is_primary:
        raise ToolError(f"--to: {target_id} is not a primary of the cluster")
    if source_id == target_id:
        raise ToolError("--from and --to name the same node")
    owned = [slot for slot, owner in enumerate(topo.owners) if owner == source_id]
    if not 0 < count <= len(owned):
        raise ToolError(f"--slots: the source serves {len(owned)} slots; expected 1..{len(owned)}")
    slots = owned[-count:]
    src, dst = cluster.conn(source.address), cluster.conn(target.address)
    try:
        pipe = dst.pipeline(transaction=False)
        for slot in slots:
            pipe.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
        pipe.execute()
        pipe = src.pipeline(transaction=False)
        for slot in slots:
            pipe.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
        pipe.execute()
        moved = 0
        # slots in chunks, each step one pipelined round trip of GETKEYSINSLOT and one of
        # MIGRATE (one per non-empty slot: a MIGRATE's keys share a slot), until empty
        for start in range(0, len(slots), 256):
            pending = slots[start : start + 256]
            while pending:
                pipe = src.pipeline(transaction=False)
                for slot in pending:
                    pipe.execute_command("CLUSTER", "GETKEYSINSLOT", slot, batch)
                found = [(slot, ids) for slot, ids in zip(pending, pipe.execute(), strict=True) if ids]
                if not found:
                    break
                pipe = src.pipeline(transaction=False)
                for _slot, ids in found:
                    pipe.execute_command("MIGRATE", target.host, target.port, "", 0, timeout_ms,
                                         "REPLACE", "KEYS", *ids)
                pipe.execute()
                moved += sum(len(ids) for _slot, ids in found)
                pending = [slot for slot, ids in found if len(ids) == batch]
    except redis.RedisError as exc:
        raise ToolError(f"reshard stopped ({exc}); the slots stay MIGRATING/IMPORTING: "
                        "run it again to finish") from None
    data = topo.to_json()
    data["epoch"] += 1
    updated = Topology.from_json(data)
    updated.set_owner(slots, target_id)
    text = updated.dumps()
    order = [target.address, source.address] + [n.address for n in updated.nodes.values()]
    for address in dict.fromkeys(order):
        cluster.call(address, "CLUSTER", "SETTOPOLOGY", text)
    return updated, moved


def check(cluster: Cluster, address: str) -> list[str]:
    """Problems found (empty when every node agrees and every slot is served)."""
    topo = cluster.topology(address)
    problems: list[str] = []
    missing = SLOTS - topo.assigned()
    if missing:
        problems.append(f"{missing} slots have no owner")
    expected = topo.dumps()
    for node in topo.nodes.values():
        try:
            seen = cluster.topology(node.address)
        except ToolError as exc:
            problems.append(str(exc))
            continue
        if seen.dumps() != expected:
            problems.append(f"{node.address} has epoch {seen.epoch}, {address} has {topo.epoch}")
    return problems


def describe(topo: Topology) -> str:
    lines = [f"epoch {topo.epoch}: {len(topo.primaries())} primaries, {topo.assigned()}/{SLOTS} slots"]
    for node in topo.primaries():
        runs = ",".join(f"{a}-{b}" for a, b in node.slots) or "no slots"
        lines.append(f"  M {node.id} {node.address} slots {runs}")
        for replica in topo.replicas_of(node.id):
            lines.append(f"    S {replica.id} {replica.address}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hotkv-cluster", description=__doc__.split("\n\n")[0])
    parser.add_argument("--user", default=None)
    parser.add_argument("--password", default=None)
    sub = parser.add_subparsers(dest="action", required=True)
    p_create = sub.add_parser("create", help="form a cluster of empty nodes")
    p_create.add_argument("nodes", nargs="+", metavar="HOST:PORT")
    p_create.add_argument("--replicas", type=int, default=0, help="replicas per primary")
    p_add = sub.add_parser("add-node", help="add an empty node (primary without slots, or replica)")
    p_add.add_argument("new", metavar="NEW_HOST:PORT")
    p_add.add_argument("existing", metavar="EXISTING_HOST:PORT")
    p_add.add_argument("--replica-of", default=None, metavar="NODE-ID")
    p_promote = sub.add_parser("promote", help="make a replica the primary of its shard")
    p_promote.add_argument("existing", metavar="EXISTING_HOST:PORT")
    p_promote.add_argument("new_primary", metavar="REPLICA_HOST:PORT")
    p_reshard = sub.add_parser("reshard", help="move slots and their objects between primaries")
    p_reshard.add_argument("existing", metavar="HOST:PORT")
    p_reshard.add_argument("--from", dest="source", required=True, metavar="NODE-ID")
    p_reshard.add_argument("--to", dest="target", required=True, metavar="NODE-ID")
    p_reshard.add_argument("--slots", type=int, required=True, help="how many slots to move")
    p_reshard.add_argument("--batch", type=int, default=100, help="objects per MIGRATE")
    p_check = sub.add_parser("check", help="check that every node agrees and every slot is served")
    p_check.add_argument("node", metavar="HOST:PORT")
    p_show = sub.add_parser("show", help="print the topology as JSON")
    p_show.add_argument("node", metavar="HOST:PORT")
    args = parser.parse_args(argv)
    cluster = Cluster(args.user, args.password)
    try:
        if args.action == "create":
            print(describe(create(cluster, args.nodes, args.replicas)))
        elif args.action == "add-node":
            print(describe(add_node(cluster, args.new, args.existing, args.replica_of)))
        elif args.action == "promote":
            print(describe(promote(cluster, args.existing, args.new_primary)))
        elif args.action == "reshard":
            topo, moved = reshard(cluster, args.existing, args.source, args.target, args.slots, args.batch)
            print(describe(topo))
            print(f"moved {args.slots} slots, {moved} objects")
        elif args.action == "show":
            print(json.dumps(cluster.topology(args.node).to_json(), indent=1))
        else:
            problems = check(cluster, args.node)
            print(describe(cluster.topology(args.node)))
            for problem in problems:
                print(f"[ERR] {problem}")
            if problems:
                return 1
            print("[OK] all nodes agree, all 16384 slots covered")
    except ToolError as exc:
        print(f"hotkv-cluster: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
