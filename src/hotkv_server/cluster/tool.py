"""``hotkv-cluster``: the operator's tool that sets a hotkv cluster's topology.

hotkv nodes have no gossip bus and elect nothing. This tool talks to every node over the
ordinary protocol, decides the topology (which primary serves which slots, which node
replicates which), makes replicas follow their primaries (``REPLICAOF``) and sends the same
topology document to every node (``CLUSTER SETTOPOLOGY``) with a higher epoch each time.

    hotkv-cluster create 127.0.0.1:7000 127.0.0.1:7001 127.0.0.1:7002 [--replicas 1]
    hotkv-cluster add-node 127.0.0.1:7003 127.0.0.1:7000 [--replica-of NODE-ID]
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
                                socket_timeout=10, decode_responses=True)
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

    def publish(self, topo: Topology, extra: Sequence[str] = ()) -> None:
        """Send ``topo`` to every node it lists (and to ``extra`` addresses)."""
        text = topo.dumps()
        targets = [n.address for n in topo.nodes.values()] + list(extra)
        for address in dict.fromkeys(targets):
            self.call(address, "CLUSTER", "SETTOPOLOGY", text)


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
    cluster.publish(updated)
    return updated


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
