"""Replication commands: REPLICAOF/SLAVEOF, ROLE, WAIT, and the primary's side of the
handshake (REPLCONF, PSYNC, SYNC), with Redis 7's replies and error wording.

The work is done by the replication subsystem, ``core.replication`` (typed as
``engine.core.ReplicationService``); a Core without it (unit tests that build one
without a server) answers these commands with an error.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from hotkv_server.engine import errors
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import alias, family
from hotkv_server.engine.replies import OK, Simple

command = family(group="replication")

if TYPE_CHECKING:
    from hotkv_server.engine.core import ReplicationService

log = logging.getLogger("hotkv")

WAIT_ON_REPLICA = (
    "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a "
    "replica is configured to be writable (which is not the default) writes to replicas are just "
    "local and are not propagated."
)


def _replication(ctx: Context) -> ReplicationService:
    repl = ctx.core.replication
    if repl is None:
        raise CommandError("ERR replication is not available in this server")
    return repl


def _replicaof(ctx: Context, argv: list[bytes]) -> Any:
    repl = _replication(ctx)
    host, port_text = argv[1], argv[2]
    if host.lower() == b"no" and port_text.lower() == b"one":
        if repl.primary is not None:
            log.info("MASTER MODE enabled (user request from 'id=%d addr=%s')", ctx.id, ctx.addr)
            repl.promote()
        return OK
    if "S" in ctx.flags:
        raise CommandError("ERR Command is not valid when client is a replica.")
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise CommandError("ERR Invalid master port")
    host_text = host.decode("utf-8", "replace")
    if repl.primary == (host_text, port):
        return Simple("OK Already connected to specified master")
    log.info("REPLICAOF %s:%d enabled (user request from 'id=%d addr=%s')", host_text, port, ctx.id, ctx.addr)
    repl.replicaof(host_text, port)
    return OK


@command("replicaof", arity=3, flags="admin noscript stale no_async_loading", since="0.1.0")
def replicaof(ctx: Context, argv: list[bytes]) -> Any:
    """REPLICAOF host port | NO ONE
    Configures a server as replica of another, or promotes it to a primary.

    SLAVEOF host port | NO ONE
    Sets a server as a replica of another, or promotes it to being a primary (REPLICAOF).
    """
    return _replicaof(ctx, argv)


alias("slaveof", of="replicaof")


@command("role", arity=1, flags="noscript loading stale fast", acl="admin dangerous")
def role(ctx: Context, argv: list[bytes]) -> Any:
    """ROLE
    Returns the replication role.
    """
    return _replication(ctx).role_reply()


@command("wait", arity=3, flags="noscript", acl="connection",
         tips="request_policy:all_shards response_policy:agg_min", complexity="O(1)")
def wait(ctx: Context, argv: list[bytes]) -> Any:
    """WAIT numreplicas timeout
    Blocks until the writes sent so far reach a number of replicas, or a timeout passes.
    """
    repl = _replication(ctx)
    if ctx.core.role == "slave":
        raise CommandError(WAIT_ON_REPLICA)
    try:
        timeout = int(argv[2])
    except ValueError:
        raise CommandError("ERR timeout is not an integer or out of range") from None
    if timeout < 0:
        raise CommandError("ERR timeout is negative")
    try:
        numreplicas = int(argv[1])
    except ValueError:
        raise CommandError(errors.NOT_INTEGER) from None
    return repl.wait(ctx, numreplicas, timeout)


@command("replconf", arity=-1, flags="admin noscript loading stale allow_busy")
def replconf(ctx: Context, argv: list[bytes]) -> Any:
    """REPLCONF
    An internal command for configuring the replication stream.
    """
    return _replication(ctx).replconf(ctx, argv)


@command("psync", arity=-3, flags="admin noscript no_multi no_async_loading")
def psync(ctx: Context, argv: list[bytes]) -> Any:
    """PSYNC replicationid offset
    An internal command used in replication: continue or start a replication stream.
    """
    repl = _replication(ctx)
    try:
        offset = int(argv[2])
    except ValueError:
        raise CommandError(errors.NOT_INTEGER) from None
    return repl.psync(ctx, argv[1].decode("utf-8", "replace"), offset)


@command("sync", arity=1, flags="admin noscript no_multi no_async_loading")
def sync(ctx: Context, argv: list[bytes]) -> Any:
    """SYNC
    An internal command used in replication: a full copy, then the stream.
    """
    return _replication(ctx).psync(ctx, "?", None)
