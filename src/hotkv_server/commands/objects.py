"""What a key's value is made of: OBJECT (ENCODING FREQ IDLETIME REFCOUNT HELP),
MEMORY (USAGE STATS DOCTOR PURGE MALLOC-STATS HELP), TOUCH.

OBJECT ENCODING uses Redis 7.0's encoding names and thresholds (``stores/values.py`` for
strings, each value type for itself). MEMORY USAGE answers the keyspace's own estimate of
the key (``KeyValueStore.entry_bytes``: key, value and per-entry overheads measured on
CPython), the same bytes maxmemory counts; it is not Redis's allocator count. MEMORY
STATS reports a subset of Redis's fields, each with hotkv's own figure (see
server/memory.py for what "used memory" is).

OBJECT IDLETIME reads the keyspace's LRU access clock, which runs only while an LRU
maxmemory policy needs it; without one it answers an error (as Redis does under LFU).
"""

from __future__ import annotations

import gc
from typing import Any

from hotkv_server.engine import errors
from hotkv_server.engine.args import parse_int
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import SpecFields, container, family, help_lines
from hotkv_server.engine.replies import OK, Simple
from hotkv_server.stores.values import is_shared_integer

command = family(group="generic")

#: OBJECT REFCOUNT of a shared integer (Redis's OBJ_SHARED_REFCOUNT, INT_MAX)
SHARED_REFCOUNT = 2**31 - 1
NO_LFU = ("ERR An LFU maxmemory policy is not selected, access frequency not tracked. "
          "Please note that when switching between policies at runtime LRU and LFU data "
          "will take some time to adjust.")

container("object", group="generic", summary="A container for object introspection commands.")


#: what OBJECT ENCODING, REFCOUNT, FREQ and IDLETIME share
_OBJECT = SpecFields(arity=3, flags="readonly", keys=(2, 2, 1), key_flags="RO",
                     tips="nondeterministic_output")


@command("object|encoding", _OBJECT, complexity="O(1)",
         help="ENCODING <key>\n    Return the kind of internal representation used to store the value of <key>.")
def object_encoding(ctx: Context, argv: list[bytes]) -> Any:
    """OBJECT ENCODING key
    Returns the internal encoding of a Redis object.
    """
    found = ctx.db.kv.encoding(argv[2], ctx.now_ms)
    return None if found is None else found.encode()


@command("object|refcount", _OBJECT,
         help="REFCOUNT <key>\n    Return the number of references of the value of <key>.")
def object_refcount(ctx: Context, argv: list[bytes]) -> Any:
    """OBJECT REFCOUNT key
    Returns the reference count of a value of a key.
    """
    value = ctx.db.kv.peek(argv[2], ctx.now_ms)
    if value is None:
        return None
    # Redis shares the integers 0..9999 between keys unless an LRU policy needs one
    # object per key for its clock
    if value.__class__ is bytes and is_shared_integer(value) and not ctx.db.kv.tracking_access:
        return SHARED_REFCOUNT
    return 1


@command("object|freq", _OBJECT,
         help="FREQ <key>\n    Return the access frequency index of <key> (needs an LFU policy, which hotkv has not).")
def object_freq(ctx: Context, argv: list[bytes]) -> Any:
    """OBJECT FREQ key
    Returns the logarithmic access frequency counter of a Redis object.
    """
    if ctx.db.kv.peek(argv[2], ctx.now_ms) is None:
        return None
    # hotkv has no LFU policy (server/memory.py), so no frequency is ever tracked
    raise CommandError(NO_LFU)


NO_LRU = ("ERR no LRU maxmemory policy is selected, idle time not tracked: hotkv keeps "
          "access times only under allkeys-lru or volatile-lru")


@command("object|idletime", _OBJECT,
         help="IDLETIME <key>\n    Return the seconds since <key> was last read or written (needs an LRU policy).")
def object_idletime(ctx: Context, argv: list[bytes]) -> Any:
    """OBJECT IDLETIME key
    Returns the time since the last access to a Redis object.
    """
    kv = ctx.db.kv
    if kv.peek(argv[2], ctx.now_ms) is None:
        return None
    idle = kv.idle_ms(argv[2], ctx.now_ms)
    if idle is None:
        # the access clock costs a stamp per read and 84 bytes per key, so it runs only
        # while an LRU policy needs it (as Redis answers an error under LFU)
        raise CommandError(NO_LRU)
    return idle // 1000


@command("object|help", arity=2, flags="loading stale")
def object_help(ctx: Context, argv: list[bytes]) -> Any:
    """OBJECT HELP
    Returns helpful text about the different subcommands.
    """
    return [Simple(line) for line in help_lines("object", ("encoding", "idletime", "freq", "refcount"))]


container("memory", group="server", summary="A container for memory diagnostics commands.")


@command("memory|usage", arity=-3, flags="readonly", keys=(2, 2, 1), group="server", key_flags="RO",
         complexity="O(1): the keyspace keeps each value's size as it changes.",
         help="USAGE <key> [SAMPLES <count>]\n    Return the estimated bytes of <key> and its value (SAMPLES is accepted; sizes are exact sums).")
def memory_usage(ctx: Context, argv: list[bytes]) -> Any:
    """MEMORY USAGE key [SAMPLES count]
    Estimates the memory usage of a key.
    """
    i = 3
    while i < len(argv):
        if argv[i].lower() == b"samples" and i + 1 < len(argv):
            samples = parse_int(argv[i + 1])
            if samples is None:
                raise CommandError(errors.NOT_INTEGER)
            if samples < 0:
                raise CommandError(errors.SYNTAX)
            i += 2
        else:
            raise CommandError(errors.SYNTAX)
    kv = ctx.db.kv
    if kv.peek(argv[2], ctx.now_ms) is None:
        return None
    return kv.entry_bytes(argv[2])


@command("memory|stats", arity=2, group="server",
         tips="nondeterministic_output request_policy:all_shards response_policy:special",
         help="STATS\n    Return memory figures: allocated, peak, keys and the keyspace's bytes.")
def memory_stats(ctx: Context, argv: list[bytes]) -> Any:
    """MEMORY STATS
    Returns details about memory usage.
    """
    core = ctx.core
    kv = ctx.db.kv
    used = core.used_memory()
    peak = core.used_memory_peak = max(used, core.used_memory_peak)
    dataset = kv.estimated_bytes()
    keys = len(kv)
    return {
        b"peak.allocated": peak,
        b"total.allocated": used,
        b"keys.count": keys,
        b"keys.bytes-per-key": dataset // keys if keys else 0,
        b"dataset.bytes": dataset,
        b"dataset.percentage": 100.0 * dataset / used if used else 0.0,
        b"peak.percentage": 100.0 * used / peak if peak else 0.0,
    }


@command("memory|doctor", arity=2, flags="", group="server",
         tips="nondeterministic_output request_policy:all_shards response_policy:special",
         help="DOCTOR\n    Return a report of memory problems, if any.")
def memory_doctor(ctx: Context, argv: list[bytes]) -> Any:
    """MEMORY DOCTOR
    Outputs a memory problems report.
    """
    core = ctx.core
    used = core.used_memory()
    limit = core.config.maxmemory
    lines = [f"used memory {used} bytes, of which the keyspace {ctx.db.kv.estimated_bytes()}."]
    if limit and used > limit:
        lines.append(f"Over maxmemory ({limit}): writes evict by {core.config.maxmemory_policy}"
                     " or are refused with OOM.")
    else:
        lines.append("No memory problem found.")
    return " ".join(lines).encode()


@command("memory|purge", arity=2, flags="", group="server",
         tips="request_policy:all_shards response_policy:all_succeeded",
         help="PURGE\n    Collect unreachable Python objects.")
def memory_purge(ctx: Context, argv: list[bytes]) -> Any:
    """MEMORY PURGE
    Asks the allocator to release memory.
    """
    gc.collect()  # what CPython can give back: cycles no longer reachable
    return OK


@command("memory|malloc-stats", arity=2, flags="", group="server",
         tips="nondeterministic_output request_policy:all_shards response_policy:special",
         help="MALLOC-STATS\n    Say that the allocator keeps no statistics.")
def memory_malloc_stats(ctx: Context, argv: list[bytes]) -> Any:
    """MEMORY MALLOC-STATS
    Returns the allocator statistics.
    """
    return b"Stats not available: hotkv runs on CPython's allocator (pymalloc), which keeps none to report."


@command("memory|help", arity=2, flags="loading stale", group="server")
def memory_help(ctx: Context, argv: list[bytes]) -> Any:
    """MEMORY HELP
    Returns helpful text about the different subcommands.
    """
    return [Simple(line) for line in help_lines("memory", ("doctor", "malloc-stats", "purge", "stats", "usage"))]


@command("touch", arity=-2, flags="readonly fast", keys=(1, -1, 1), key_flags="RO",
         tips="request_policy:multi_shard response_policy:agg_sum",
         complexity="O(N) where N is the number of keys that will be touched.")
def touch(ctx: Context, argv: list[bytes]) -> Any:
    """TOUCH key [key ...]
    Returns the number of existing keys out of those specified after updating the time they were
    last accessed.
    """
    lookup = ctx.db.kv.lookup
    now = ctx.now_ms
    return sum(1 for key in argv[1:] if lookup(key, now) is not None)
