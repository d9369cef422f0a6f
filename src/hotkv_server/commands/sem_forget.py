"""AMEM.SEM.FORGET: the HotKV dialect's removal of one fact (AMEM.SEM.DEL takes many).

Kept apart from commands/sem.py, which holds the namespace, store and search commands.
"""

from __future__ import annotations

from hotkv_server.engine.args import Args
from hotkv_server.engine.context import Context
from hotkv_server.engine.registry import command
from hotkv_server.stores.sem_effects import SemDel


@command("amem.sem.forget", arity=3, flags="write", key="RW delete", group="sem", dialect=True)
def sem_forget(ctx: Context, argv: list[bytes]) -> int:
    """AMEM.SEM.FORGET ns id
    Deletes one fact; 1 if it existed, else 0 (also when the namespace is missing).
    """
    args = Args(argv, 1)
    name = args.ident("ns")
    ident = args.ident("id")
    store = ctx.db.sem
    ns = store.get(name)
    if ns is None or ns.get(ident, ctx.now_ms) is None:
        return 0
    ctx.emit(SemDel(name, [ident]))
    return 1
