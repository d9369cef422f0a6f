"""Per-connection state that handlers see as ``ctx`` (one object per client, reused)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hotkv_server.engine.core import Core
    from hotkv_server.engine.registry import CommandSpec


class Context:
    """One client's session: protocol, identity, transaction state, and the clock snapshot.

    ``now_ms`` is set by the dispatch point before every handler call (once for a whole
    EXEC), so a handler and every effect it makes agree on the time.
    """

    __slots__ = (
        "addr",
        "authenticated",
        "blocked",
        "close_after_reply",
        "closer",
        "conn",
        "core",
        "created_ms",
        "db",
        "dirty_cas",
        "emit",
        "flags",
        "id",
        "is_master_link",
        "killed",
        "laddr",
        "last_cmd",
        "last_interaction_ms",
        "lib_name",
        "lib_ver",
        "multi",
        "multi_error",
        "name",
        "now_ms",
        "proto",
        "pubsub",
        "push",
        "transport",
        "user",
        "username",
        "watched",
        "writer",
    )

    def __init__(self, core: Core, addr: str = "", laddr: str = "") -> None:
        self.core = core
        self.db = core.db
        #: ``ctx.emit(effect)``: apply one effect and queue it for the AOF and the replicas
        #: (Core.emit itself, bound here: one call less on every write)
        self.emit: Callable[[list[Any]], Any] = core.emit
        self.id = core.new_client_id()
        self.addr = addr
        self.laddr = laddr
        self.proto = 2
        self.name = b""
        self.lib_name = b""
        self.lib_ver = b""
        users = core.users
        #: the ACL user whose rules apply (None only when the ACL module is not attached)
        self.user: Any = users.initial_user() if users is not None else None
        self.username = "default"
        if users is not None:
            self.authenticated = not users.default_needs_auth()
        else:
            self.authenticated = not core.config.values["requirepass"]
        self.multi: list[tuple[CommandSpec, list[bytes]]] | None = None
        self.multi_error = False
        self.watched: set[bytes] = set()
        self.dirty_cas = False
        self.now_ms = core.clock.now_ms()
        self.created_ms = self.now_ms
        self.last_interaction_ms = self.now_ms
        self.last_cmd = "NULL"
        self.close_after_reply = False
        #: waiting for a deferred reply (WAIT, RECALL off the loop): idle timeouts skip it
        self.blocked = False
        self.killed = False
        self.is_master_link = False
        self.flags = ""
        #: writes out-of-band bytes (MONITOR feed, replication) to this client, if connected
        self.writer: Callable[[bytes], None] | None = None
        #: writes encoded out-of-band bytes (pub/sub messages) in order with the replies
        self.push: Callable[[bytes], None] | None = None
        #: this client's subscriptions (engine/pubsub.py), None while it has none
        self.pubsub: Any = None
        #: closes this client's connection (CLIENT KILL, timeout); set by the network layer
        self.closer: Callable[[], None] | None = None
        #: the connection's transport (the replication primary writes a replica's stream
        #: to it directly); None for contexts without a connection
        self.transport: Any = None
        #: the network side (server/connection.py ClientProtocol): CLIENT LIST reads its
        #: buffer sizes; None for contexts without a connection
        self.conn: Any = None


    def unwatch(self) -> None:
        watchers = self.core.watchers
        for key in self.watched:
            ctxs = watchers.get(key)
            if ctxs is not None:
                ctxs.discard(self)
                if not ctxs:
                    del watchers[key]
        self.watched.clear()
        self.dirty_cas = False
