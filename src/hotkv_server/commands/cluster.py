"""Redis Cluster commands: CLUSTER ..., ASKING, READONLY, READWRITE.

The node's cluster state lives in ``core.cluster`` (``hotkv_server.cluster.state``), set only
when ``cluster-enabled yes``; without it every command here answers Redis's "cluster support
disabled". hotkv has no gossip bus: the topology arrives whole from the operator tool
(``hotkv-cluster``) through ``CLUSTER SETTOPOLOGY`` (a hotkv extension), so MEET, FORGET,
FAILOVER and the other gossip subcommands are refused with a line that says where the
topology comes from. Replies follow Redis 7.0's shapes (CLUSTER SLOTS, SHARDS, NODES, INFO).
"""

from __future__ import annotations

from typing import Any

from hotkv_server.engine.args import either
from hotkv_server.engine.context import Context
from hotkv_server.engine.core import ClusterService
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import SpecFields, add_spec, container, family, help_lines
from hotkv_server.engine.replies import OK, Verbatim
from hotkv_server.engine.slots import SLOTS, key_slot
from hotkv_server.engine.topology import Node, Topology, TopologyError

command = family(group="cluster")

DISABLED = "ERR This instance has cluster support disabled"
NO_GOSSIP = ("ERR CLUSTER {} is not supported by hotkv: the topology is set by the "
             "hotkv-cluster tool (CLUSTER SETTOPOLOGY)")


def _cluster(ctx: Context) -> ClusterService:
    state = ctx.core.cluster
    if state is None:
        raise CommandError(DISABLED)
    return state


def _slot_arg(raw: bytes) -> int:
    try:
        slot = int(raw)
    except ValueError:
        slot = -1
    if not 0 <= slot < SLOTS or not raw.lstrip(b"-").isdigit():
        raise CommandError("ERR Invalid or out of range slot")
    return slot


def _slot_and_count(argv: list[bytes], error: str) -> list[int]:
    """COUNTKEYSINSLOT's slot, GETKEYSINSLOT's slot and count: ``error`` when one is not an
    integer, the slot is out of range or the count negative."""
    try:
        values = [int(raw) for raw in argv[2:]]
    except ValueError:
        raise CommandError(error) from None
    if not 0 <= values[0] < SLOTS or any(value < 0 for value in values[1:]):
        raise CommandError(error)
    return values


container("cluster", group="cluster", summary="A container for Redis Cluster commands.")


@command("cluster|myid", arity=2, flags="stale", help="MYID\n    Return the node id.")
def cluster_myid(ctx: Context, argv: list[bytes]) -> Any:
    """CLUSTER MYID
    Returns the ID of a node.
    """
    return _cluster(ctx).myid.encode()


@command("cluster|keyslot", arity=3, flags="stale",
         complexity="O(N) where N is the number of bytes in the key",
         help="KEYSLOT <key>\n    Return the hash slot for <key>.")
def cluster_keyslot(ctx: Context, argv: list[bytes]) -> Any:
    """CLUSTER KEYSLOT key
    Returns the hash slot for a key.
    """
    _cluster(ctx)
    return key_slot(argv[2])


@command("cluster|info", arity=2, flags="stale", tips="nondeterministic_output",
         help="INFO\n    Return information about the cluster.")
def cluster_info(ctx: Context, argv: list[bytes]) -> Any:
    """CLUSTER INFO
    Returns information about the state of a node.
    """
    state = _cluster(ctx)
    topo = state.topology
    assigned = topo.assigned()
    me = topo.nodes.get(state.myid)
    fields = [
        ("cluster_state", "ok" if assigned and state.state_ok() else "fail"),
        ("cluster_slots_assigned", assigned),
        ("cluster_slots_ok", assigned),
        ("cluster_slots_pfail", 0),
        ("cluster_slots_fail", 0),
        ("cluster_known_nodes", max(len(topo.nodes), 1)),
        ("cluster_size", sum(1 for n in topo.primaries() if n.slots)),
        ("cluster_current_epoch", topo.epoch),
        ("cluster_my_epoch", topo.epoch if me is not None else 0),
        ("cluster_stats_messages_sent", 0),
        ("cluster_stats_messages_received", 0),
        ("total_cluster_links_buffer_limit_exceeded", 0),
    ]
    return Verbatim("".join(f"{k}:{v}\r\n" for k, v in fields))


def _node_entry(node: Node) -> list[Any]:
    return [node.host.encode(), node.port, node.id.encode(), {}]


@command("cluster|slots", arity=2, flags="stale", tips="nondeterministic_output",
         complexity="O(N) where N is the total number of Cluster nodes",
         help="SLOTS\n    Return information about slots range mappings. Each range is made of:\n    start, end, master and replicas IP addresses, ports and ids")
def cluster_slots(ctx: Context, argv: list[bytes]) -> Any:
    """CLUSTER SLOTS
    Returns the mapping of cluster slots to nodes.
    """
    topo = _cluster(ctx).topology
    out: list[Any] = []
    for node in topo.primaries():
        replicas = topo.replicas_of(node.id)
        for first, last in node.slots:
            out.append([first, last, _node_entry(node), *(_node_entry(r) for r in replicas)])
    out.sort(key=lambda entry: entry[0])
    return out


@command("cluster|shards", arity=2, flags="stale", tips="nondeterministic_output",
         complexity="O(N) where N is the total number of cluster nodes",
         help="SHARDS\n    Return information about slot range mappings and the nodes associated with them.")
def cluster_shards(ctx: Context, argv: list[bytes]) -> Any:
    """CLUSTER SHARDS
    Returns the mapping of cluster slots to shards.
    """
    state = _cluster(ctx)
    topo = state.topology
    offset = _offset(ctx)
    out: list[Any] = []
    for node in topo.primaries():
        slots: list[int] = []
        for first, last in node.slots:
            slots.extend((first, last))
        members = [node, *topo.replicas_of(node.id)]
        out.append({
            b"slots": slots,
            b"nodes": [{
                b"id": m.id.encode(), b"port": m.port, b"ip": m.host.encode(),
                b"endpoint": m.host.encode(),
                b"role": b"master" if m.is_primary else b"replica",
                b"replication-offset": offset if m.id == state.myid else 0,
                b"health": b"online",
            } for m in members],
        })
    return out


def _offset(ctx: Context) -> int:
    repl = ctx.core.replication
    return repl.offset if repl is not None else 0


def nodes_lines(state: ClusterService, only: list[Node] | None = None) -> str:
    """CLUSTER NODES's text: one line per node, Redis 7.0's field order (bus port 0: hotkv has
    no cluster bus)."""
    topo = state.topology
    nodes = only if only is not None else (list(topo.nodes.values()) or [state.me()])
    lines = []
    for node in nodes:
        flags = ("myself," if node.id == state.myid else "") + ("master" if node.is_primary else "slave")
        slots = [f"{a}" if a == b else f"{a}-{b}" for a, b in node.slots]
        if node.id == state.myid:
            slots += [f"[{s}->-{d}]" for s, d in sorted(state.migrating.items())]
            slots += [f"[{s}-<-{src}]" for s, src in sorted(state.importing.items())]
        parts = [node.id, f"{node.host}:{node.port}@0", flags,
                 node.primary or "-", "0", "0", str(topo.epoch), "connected", *slots]
        lines.append(" ".join(parts) + "\n")
    return "".join(lines)


@command("cluster|nodes", arity=2, flags="stale", tips="nondeterministic_output",
         complexity="O(N) where N is the total number of Cluster nodes",
         help="NODES\n    Return cluster configuration seen by node. Output format:\n    <id> <ip:port@bus-port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...")
def cluster_nodes(ctx: Context, argv: list[bytes]) -> Any:
    """CLUSTER NODES
    Returns the cluster configuration for a node.
    """
    return Verbatim(nodes_lines(_cluster(ctx)))


@command("cluster|replicas", arity=3, flags="admin stale", tips="nondeterministic_output",
         complexity="O(N) where N is the number of replicas.",
         help="REPLICAS <node-id>\n    Return <node-id> replicas.")
def cluster_replicas(ctx: Context, argv: list[bytes]) -> Any:
    """CLUSTER REPLICAS node-id
    Lists the replica nodes of a master node.

    CLUSTER SLAVES node-id
    Lists the replica nodes of a master node (an old name of CLUSTER REPLICAS).
    """
    state = _cluster(ctx)
    node_id = argv[2].decode("utf-8", "replace")
    node = state.topology.nodes.get(node_id)
    if node is None:
        raise CommandError(f"ERR Unknown node {node_id}")
    if not node.is_primary:
        raise CommandError("ERR The specified node is not a master")
    return [nodes_lines(state, [r]).rstrip("\n").encode() for r in state.topology.replicas_of(node_id)]


command("cluster|slaves", arity=3, flags="admin stale", group="cluster", tips="nondeterministic_output",
        since="3.0.0")(cluster_replicas)


#: what COUNTKEYSINSLOT and GETKEYSINSLOT share
_SLOT_KEYS = SpecFields(flags="stale",
                        complexity="O(N) where N is the number of keys of the node (hotkv keeps no slot index)")


@command("cluster|countkeysinslot", _SLOT_KEYS, arity=3,
         help="COUNTKEYSINSLOT <slot>\n    Return the number of keys in <slot>.")
def cluster_countkeysinslot(ctx: Context, argv: list[bytes]) -> Any:
    """CLUSTER COUNTKEYSINSLOT slot
    Returns the number of keys in a hash slot.
    """
    state = _cluster(ctx)
    (slot,) = _slot_and_count(argv, "ERR Invalid slot")
    return len(state.ids_in_slot(ctx, slot))


@command("cluster|getkeysinslot", _SLOT_KEYS, arity=4, tips="nondeterministic_output",
         help="GETKEYSINSLOT <slot> <count>\n    Return key names stored by current node in a slot.")
def cluster_getkeysinslot(ctx: Context, argv: list[bytes]) -> Any:
    """CLUSTER GETKEYSINSLOT slot count
    Returns the key names in a hash slot.
    """
    state = _cluster(ctx)
    slot, count = _slot_and_count(argv, "ERR Invalid slot or number of keys")
    return state.ids_in_slot(ctx, slot)[:count]


def _slots_of(argv: list[bytes], ranged: bool) -> list[int]:
    if ranged:
        if len(argv) % 2:
            raise CommandError(f"ERR wrong number of arguments for 'cluster|{argv[1].lower().decode()}' command")
        out: list[int] = []
        for i in range(2, len(argv), 2):
            first, last = _slot_arg(argv[i]), _slot_arg(argv[i + 1])
            if first > last:
                raise CommandError(f"ERR start slot number {first} is greater than end slot number {last}")
            out.extend(range(first, last + 1))
    else:
        out = [_slot_arg(raw) for raw in argv[2:]]
    if len(set(out)) != len(out):
        dup = next(s for s in out if out.count(s) > 1)
        raise CommandError(f"ERR Slot {dup} specified multiple times")
    return out


#: what ADDSLOTS and DELSLOTS share, and ADDSLOTSRANGE and DELSLOTSRANGE
_SLOTS = SpecFields(arity=-3, flags="admin stale no_async_loading", complexity="O(N) where N is the total number of hash slot arguments")
_RANGES = SpecFields(arity=-4, flags="admin stale no_async_loading", since="7.0.0",
                     complexity="O(N) where N is the total number of the slots between the start "
                                "slot and end slot arguments.")


@command("cluster|addslots", _SLOTS,
         help="ADDSLOTS <slot> [<slot> ...]\n    Assign slots to current node.")
@command("cluster|addslotsrange", _RANGES,
         help="ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]\n    Assign slots which are between <start-slot> and <end-slot> to current node.")
@command("cluster|delslots", _SLOTS,
         help="DELSLOTS <slot> [<slot> ...]\n    Delete slots information from current node.")
@command("cluster|delslotsrange", _RANGES,
         help="DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]\n    Delete slots information which are between <start-slot> and <end-slot> from current node.")
def cluster_change_slots(ctx: Context, argv: list[bytes]) -> Any:
    """CLUSTER ADDSLOTS slot [slot ...]
    Assigns new hash slots to a node.

    CLUSTER ADDSLOTSRANGE start-slot end-slot [start-slot end-slot ...]
    Assigns new hash slot ranges to a node.

    CLUSTER DELSLOTS slot [slot ...]
    Sets hash slots as unbound for a node.

    CLUSTER DELSLOTSRANGE start-slot end-slot [start-slot end-slot ...]
    Sets hash slot ranges as unbound for a node.
    """
    sub = argv[1].lower()
    add, ranged = sub.startswith(b"add"), sub.endswith(b"range")
    state = _cluster(ctx)
    slots = _slots_of(argv, ranged)
    topo = state.topology
    for slot in slots:
        if add and topo.owners[slot] is not None:
            raise CommandError(f"ERR Slot {slot} is already busy")
        if not add and topo.owners[slot] is None:
            raise CommandError(f"ERR Slot {slot} is already unassigned")
    if state.myid not in topo.nodes:
        topo.nodes[state.myid] = state.me()
    topo.set_owner(slots, state.myid if add else None)
    state.save()
    return OK


def _db_empty(ctx: Context) -> bool:
    now = ctx.now_ms
    return not any(next(iter(store.ids(now)), None) is not None for store in ctx.core.db.stores.values())


@command("cluster|flushslots", arity=2, flags="admin stale no_async_loading",
         help="FLUSHSLOTS\n    Delete current node own slots information.")
def cluster_flushslots(ctx: Context, argv: list[bytes]) -> Any:
    """CLUSTER FLUSHSLOTS
    Deletes all slots information from a node.
    """
    state = _cluster(ctx)
    if not _db_empty(ctx):
        raise CommandError("ERR DB must be empty to perform CLUSTER FLUSHSLOTS.")
    mine = [s for s, owner in enumerate(state.topology.owners) if owner == state.myid]
    state.topology.set_owner(mine, None)
    state.save()
    return OK


@command("cluster|setslot", arity=-4, flags="admin stale no_async_loading",
         help="SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)\n    Set slot state.")
def cluster_setslot(ctx: Context, argv: list[bytes]) -> Any:
    """CLUSTER SETSLOT slot IMPORTING node-id|MIGRATING node-id|NODE node-id|STABLE
    Binds a hash slot to a node.
    """
    state = _cluster(ctx)
    slot = _slot_arg(argv[2])
    action = argv[3].lower()
    topo = state.topology
    if action == b"stable":
        if len(argv) != 4:
            raise CommandError("ERR syntax error")
        state.migrating.pop(slot, None)
        state.importing.pop(slot, None)
        state.save_soon()
        return OK
    if action not in (b"importing", b"migrating", b"node") or len(argv) != 5:
        raise CommandError("ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP")
    node_id = argv[4].decode("utf-8", "replace")
    if node_id not in topo.nodes:
        raise CommandError(f"ERR I don't know about node {node_id}")
    if action == b"migrating":
        if topo.owners[slot] != state.myid:
            raise CommandError(f"ERR I'm not the owner of hash slot {slot}")
        if not topo.nodes[node_id].is_primary:
            raise CommandError("ERR Target node is not a master")
        state.migrating[slot] = node_id
        state.migrating_changed()
    elif action == b"importing":
        if topo.owners[slot] == state.myid:
            raise CommandError(f"ERR I'm already the owner of hash slot {slot}")
        state.importing[slot] = node_id
    else:
        if not topo.nodes[node_id].is_primary:
            raise CommandError("ERR Target node is not a master")
        if topo.owners[slot] == state.myid and node_id != state.myid and state.ids_in_slot(ctx, slot):
            raise CommandError(f"ERR Can't assign hashslot {slot} to a different node while I still hold keys for this hash slot.")
        topo.set_owner([slot], node_id)
        state.migrating.pop(slot, None)
        if node_id == state.myid:
            state.importing.pop(slot, None)
    state.save_soon()
    return OK


@command("cluster|reset", arity=-2, flags="admin noscript stale",
         complexity="O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.",
         help="RESET [HARD|SOFT]\n    Reset current node (default: soft).")
def cluster_reset(ctx: Context, argv: list[bytes]) -> Any:
    """CLUSTER RESET [HARD|SOFT]
    Resets a node.
    """
    state = _cluster(ctx)
    if len(argv) > 3:
        raise CommandError("ERR syntax error")
    hard = either(argv, 2, b"SOFT", b"HARD", "ERR syntax error")
    me = state.topology.nodes.get(state.myid)
    if (me is None or me.is_primary) and not _db_empty(ctx):
        raise CommandError("ERR CLUSTER RESET can't be called with master nodes containing keys")
    state.reset(hard)
    return OK


@command("cluster|saveconfig", arity=2, flags="admin stale no_async_loading",
         help="SAVECONFIG\n    Force saving cluster configuration on disk.")
def cluster_saveconfig(ctx: Context, argv: list[bytes]) -> Any:
    """CLUSTER SAVECONFIG
    Forces a node to save the cluster configuration to disk.
    """
    _cluster(ctx).save()
    return OK


@command("cluster|settopology", arity=3, flags="admin loading stale no_async_loading",
         since="0.2.0",
         help="SETTOPOLOGY <json>\n    Replace this node's topology (hotkv; sent by hotkv-cluster).")
def cluster_settopology(ctx: Context, argv: list[bytes]) -> Any:
    """CLUSTER SETTOPOLOGY json-topology
    Replaces this node's view of the cluster with a topology document (hotkv extension;
    hotkv-cluster sends it to every node).
    """
    state = _cluster(ctx)
    try:
        topo = Topology.parse(argv[2])
    except TopologyError as exc:
        raise CommandError(f"ERR invalid topology: {exc}") from None
    if topo.epoch < state.topology.epoch:
        raise CommandError(f"ERR topology epoch {topo.epoch} is older than this node's {state.topology.epoch}")
    state.set_topology(topo)
    return OK


@command("cluster|topology", arity=2, flags="loading stale", since="0.2.0",
         help="TOPOLOGY\n    Return this node's topology document as JSON (hotkv).")
def cluster_topology(ctx: Context, argv: list[bytes]) -> Any:
    """CLUSTER TOPOLOGY
    Returns this node's topology document as JSON (hotkv extension).
    """
    return _cluster(ctx).topology.dumps().encode()


def _no_gossip(ctx: Context, argv: list[bytes]) -> Any:
    _cluster(ctx)
    raise CommandError(NO_GOSSIP.format(argv[1].upper().decode("utf-8", "replace")))


#: the gossip subcommands hotkv refuses: (name, arity, flags, tips, syntax), Redis 7's metadata
_GOSSIP = (
    ("meet", -4, "admin stale no_async_loading", "", "ip port [cluster-bus-port]"),
    ("forget", 3, "admin stale no_async_loading", "", "node-id"),
    ("failover", -2, "admin stale no_async_loading", "", "[FORCE|TAKEOVER]"),
    ("replicate", 3, "admin stale no_async_loading", "", "node-id"),
    ("bumpepoch", 2, "admin stale no_async_loading", "nondeterministic_output", ""),
    ("set-config-epoch", 3, "admin stale no_async_loading", "", "config-epoch"),
    ("count-failure-reports", 3, "admin stale", "nondeterministic_output", "node-id"),
    ("links", 2, "stale", "nondeterministic_output", ""),
)
for _name, _arity, _flags, _tips, _syntax in _GOSSIP:  # one summary for all: made from the table
    add_spec(f"cluster|{_name}", handler=_no_gossip, arity=_arity, flags=_flags, tips=_tips,
             group="cluster", syntax=_syntax,
             summary="Refused: hotkv has no cluster bus (hotkv-cluster sets the topology).")


@command("cluster|help", arity=2, flags="loading stale")
def cluster_help(ctx: Context, argv: list[bytes]) -> Any:
    """CLUSTER HELP
    Returns helpful text about the different subcommands.
    """
    return [line.encode() for line in help_lines("cluster", ("addslots", "addslotsrange", "countkeysinslot", "delslots", "delslotsrange", "flushslots", "getkeysinslot", "info", "keyslot", "myid", "nodes", "replicas", "reset", "saveconfig", "setslot", "settopology", "shards", "slots", "topology"))]


@command("asking", arity=1, acl="@connection", flags="fast")
def asking(ctx: Context, argv: list[bytes]) -> Any:
    """ASKING
    Signals that a cluster client is following an -ASK redirect.
    """
    _cluster(ctx)
    ctx.asking = True
    return OK


#: what READONLY and READWRITE share
_READ_MODE = SpecFields(arity=1, flags="fast loading stale", acl="@connection")


@command("readwrite", _READ_MODE)
@command("readonly", _READ_MODE)
def read_mode(ctx: Context, argv: list[bytes]) -> Any:
    """READWRITE
    Enables read-write queries for a connection to a Redis Cluster replica node.

    READONLY
    Enables read-only queries for a connection to a Redis Cluster replica node.
    """
    _cluster(ctx)
    ctx.cluster_readonly = argv[0].lower() == b"readonly"
    return OK
