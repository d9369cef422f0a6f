"""One module per command family; importing this package fills the command table."""

from __future__ import annotations

import importlib

#: every command module, in the order COMMAND lists nothing special about
MODULES = (
    "connection",
    "transactions",
    "strings",
    "string_sets",
    "string_ranges",
    "keys",
    "keycopy",
    "objects",
    "hashes",
    "sets",
    "setalgebra",
    "sort",
    "info",
    "config",
    "admin",
    "introspection",
    "conv",
    "sem",
    "sem_forget",
    "work",
    "epis",
    "summary",
    "amem",
    "dedup",
    "search",
    "acl",
    "replication",
    "pubsub",
    "lists",
    "lists_blocking",
    "zsets",
    "zset_ranges",
    "zset_setops",
    "zsets_blocking",
    "client_unblock",
    "cluster",
    "scripting",
    "migrate",
    "vsets",
    "vsim",
    "vsim_index",
)

_loaded = False


def load_all() -> None:
    """Import every command module once (registration happens at import time)."""
    global _loaded
    if _loaded:
        return
    for name in MODULES:
        importlib.import_module(f"hotkv_server.commands.{name}")
    _loaded = True
