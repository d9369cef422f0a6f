"""CLIENT UNBLOCK: end the wait of a client blocked on keys (BLPOP, BZPOPMIN ...).

TIMEOUT (the default) answers the blocked command as its timeout would; ERROR answers
``-UNBLOCKED client unblocked via CLIENT UNBLOCK``. Only clients blocked on keys count:
a client in WAIT or a deferred AMEM.SEM.RECALL answers 0, as a client that is not blocked.
"""

from __future__ import annotations

from typing import Any

from hotkv_server.engine import errors
from hotkv_server.engine.args import either, parse_int
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import command


@command("client|unblock", arity=-3, flags="admin noscript loading stale", group="connection",
         since="5.0.0", complexity="O(log N) where N is the number of client connections")
def client_unblock(ctx: Context, argv: list[bytes]) -> Any:
    """CLIENT UNBLOCK client-id [TIMEOUT|ERROR]
    Unblocks a client blocked by a blocking command from a different connection.
    """
    if len(argv) > 4:
        raise CommandError(errors.SYNTAX)
    client_id = parse_int(argv[2])
    if client_id is None:
        raise CommandError(errors.NOT_INTEGER)
    error = either(argv, 3, b"TIMEOUT", b"ERROR", "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
    return 1 if ctx.core.blocking.unblock(client_id, error) else 0
