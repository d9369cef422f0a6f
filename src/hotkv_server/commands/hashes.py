"""The hash commands of Redis 7.0: HSET HSETNX HGET HMGET HMSET HGETALL HDEL HEXISTS HLEN
HSTRLEN HKEYS HVALS HINCRBY HINCRBYFLOAT HRANDFIELD HSCAN.

Replies and errors are Redis's. Writes are effects (``stores/hashes.py``): ``kv.put`` of
the new hash when the key was absent, else ``kv.hset`` / ``kv.hdel``; HINCRBY and
HINCRBYFLOAT write the resulting value, and HRANDFIELD only reads, so replay never
re-decides anything.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Container
from typing import Any, NamedTuple, TypeVar

from hotkv_server.commands.floats import (
    add_long_doubles,
    format_long_double,
    is_finite,
    parse_long_double,
)
from hotkv_server.commands.keys import parse_cursor
from hotkv_server.commands.scanning import ELEMENT_SCAN, matching, scan_options
from hotkv_server.commands.strings import NAN_OR_INF
from hotkv_server.commands.typed import read, target
from hotkv_server.engine import errors
from hotkv_server.engine.args import parse_int
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import SpecFields, family
from hotkv_server.engine.replies import OK
from hotkv_server.stores.effect import Effect
from hotkv_server.stores.hashes import HashValue
from hotkv_server.stores.hashes_effects import KvHdel, KvHset
from hotkv_server.stores.keyspace_effects import KvPut
from hotkv_server.stores.sets import SetValue

command = family(group="hash")

LLONG_MAX = 2**63 - 1
LLONG_MIN = -(2**63)
HASH_NOT_INTEGER = "ERR hash value is not an integer"
HASH_NOT_FLOAT = "ERR hash value is not a float"
OUT_OF_RANGE = "ERR value is out of range"
NAN_OR_INF_VALUE = "ERR value is NaN or Infinity"


def set_fields(ctx: Context, key: bytes, found: HashValue | None, pairs: list[bytes]) -> int:
    """Write ``field, value ...`` to the hash at ``key`` (``found``, None for a new hash);
    returns how many fields were new."""
    if found is None:
        ctx.emit(KvPut(key, "hash", pairs, None))
        return len(set(pairs[::2]))
    added: int = ctx.emit(KvHset(key, pairs))
    return added


#: what HSET and HMSET share
_HSET = SpecFields(arity=-4, flags="write denyoom fast", key="RW update")


@command("hset", _HSET,
         complexity="O(1) for each field/value pair added, so O(N) to add N field/value pairs "
                    "when the command is called with multiple field/value pairs.")
def hset(ctx: Context, argv: list[bytes]) -> Any:
    """HSET key field value [field value ...]
    Creates or modifies the value of a field in a hash.
    """
    if len(argv) % 2:
        raise CommandError(errors.wrong_arity("hset"))
    key = argv[1]
    # set_fields written out: HSET is a hot path
    found = ctx.db.kv.typed(key, ctx.now_ms, HashValue)
    if found is None:
        ctx.emit(KvPut(key, "hash", argv[2:], None))
        return 1 if len(argv) == 4 else len(set(argv[2::2]))
    added: int = ctx.emit(KvHset(key, argv[2:]))
    return added


@command("hmset", _HSET, complexity="O(N) where N is the number of fields being set.")
def hmset(ctx: Context, argv: list[bytes]) -> Any:
    """HMSET key field value [field value ...]
    Sets the values of multiple fields.
    """
    if len(argv) % 2:
        raise CommandError(errors.wrong_arity("hmset"))
    key = argv[1]
    set_fields(ctx, key, target(ctx, key, HashValue), argv[2:])
    return OK


@command("hsetnx", arity=4, flags="write denyoom fast", key="RW insert")
def hsetnx(ctx: Context, argv: list[bytes]) -> Any:
    """HSETNX key field value
    Sets the value of a field in a hash only when the field doesn't exist.
    """
    key = argv[1]
    found = target(ctx, key, HashValue)
    if found is not None and argv[2] in found:
        return 0
    set_fields(ctx, key, found, argv[2:4])
    return 1


@command("hget", arity=3, flags="readonly fast", key="RO access")
def hget(ctx: Context, argv: list[bytes]) -> Any:
    """HGET key field
    Returns the value of a field in a hash.
    """
    found = ctx.db.kv.typed(argv[1], ctx.now_ms, HashValue)
    stats = ctx.core.stats  # read() written out: HGET is a hot path
    if found is None:
        stats.keyspace_misses += 1
        return None
    stats.keyspace_hits += 1
    return found.get(argv[2])


@command("hmget", arity=-3, flags="readonly fast", key="RO access",
         complexity="O(N) where N is the number of fields being requested.")
def hmget(ctx: Context, argv: list[bytes]) -> Any:
    """HMGET key field [field ...]
    Returns the values of all fields in a hash.
    """
    found = read(ctx, argv[1], HashValue)
    if found is None:
        return [None] * (len(argv) - 2)
    get = found.get
    return [get(field) for field in argv[2:]]


#: what HGETALL, HKEYS and HVALS share
_WHOLE = SpecFields(arity=2, flags="readonly", key="RO access",
                    tips="nondeterministic_output_order", complexity="O(N) where N is the size of the hash.")


@command("hgetall", _WHOLE)
def hgetall(ctx: Context, argv: list[bytes]) -> Any:
    """HGETALL key
    Returns all fields and values in a hash.
    """
    found = read(ctx, argv[1], HashValue)
    return {} if found is None else found.to_dict()


@command("hkeys", _WHOLE)
def hkeys(ctx: Context, argv: list[bytes]) -> Any:
    """HKEYS key
    Returns all fields in a hash.
    """
    found = read(ctx, argv[1], HashValue)
    return [] if found is None else found.names()


@command("hvals", _WHOLE)
def hvals(ctx: Context, argv: list[bytes]) -> Any:
    """HVALS key
    Returns all values in a hash.
    """
    found = read(ctx, argv[1], HashValue)
    return [] if found is None else found.values()


@command("hdel", arity=-3, flags="write fast", key="RW delete",
         complexity="O(N) where N is the number of fields to be removed.")
def hdel(ctx: Context, argv: list[bytes]) -> Any:
    """HDEL key field [field ...]
    Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.
    """
    found = target(ctx, argv[1], HashValue)
    return 0 if found is None else remove_present(ctx, argv, found, KvHdel)


def remove_present(ctx: Context, argv: list[bytes], entries: Container[bytes],
                   record: Callable[[bytes, list[bytes]], Effect]) -> int:
    """HDEL and SREM: emit ``record(key, gone)`` for the named ``argv[2:]`` that are among
    the ``entries`` of ``argv[1]`` (each once); how many went."""
    gone = [entry for entry in dict.fromkeys(argv[2:]) if entry in entries]
    if not gone:
        return 0
    removed: int = ctx.emit(record(argv[1], gone))
    return removed


@command("hexists", arity=3, flags="readonly fast", key="RO")
def hexists(ctx: Context, argv: list[bytes]) -> Any:
    """HEXISTS key field
    Determines whether a field exists in a hash.
    """
    found = read(ctx, argv[1], HashValue)
    return int(found is not None and argv[2] in found)


@command("hlen", arity=2, flags="readonly fast", key="RO")
def hlen(ctx: Context, argv: list[bytes]) -> Any:
    """HLEN key
    Returns the number of fields in a hash.
    """
    found = read(ctx, argv[1], HashValue)
    return 0 if found is None else len(found)


@command("hstrlen", arity=3, flags="readonly fast", key="RO")
def hstrlen(ctx: Context, argv: list[bytes]) -> Any:
    """HSTRLEN key field
    Returns the length of the value of a field.
    """
    found = read(ctx, argv[1], HashValue)
    if found is None:
        return 0
    value = found.get(argv[2])
    return 0 if value is None else len(value)


def _integer_increment(raw: bytes) -> int:
    delta = parse_int(raw)
    if delta is None:
        raise CommandError(errors.NOT_INTEGER)
    return delta


def _integer_sum(current: int, delta: int) -> int:
    new = current + delta
    if new > LLONG_MAX or new < LLONG_MIN:
        raise CommandError(errors.INCR_OVERFLOW)
    return new


def _float_increment(raw: bytes) -> Any:
    delta = parse_long_double(raw)
    if delta is None:
        raise CommandError(errors.NOT_FLOAT)
    if not is_finite(delta):  # HINCRBYFLOAT refuses an infinite increment up front
        raise CommandError(NAN_OR_INF_VALUE)
    return delta


def _float_sum(current: Any, delta: Any) -> Any:
    total = add_long_doubles(current, delta)
    if total is None:
        raise CommandError(NAN_OR_INF)
    return total


class _Numbers(NamedTuple):
    """How HINCRBY and HINCRBYFLOAT read, add and write their numbers."""

    increment: Callable[[bytes], Any]  # the increment argument (or its error)
    parse: Callable[[bytes], Any]  # a field's value as a number, None when it is not one
    not_number: str  # the error for a field that is not
    zero: Any  # a missing field's value
    add: Callable[[Any, Any], Any]  # the sum (or its error)
    text: Callable[[Any], bytes]  # the sum as the field holds it (and the effect writes it)
    reply_text: bool  # the reply is that text (HINCRBYFLOAT), else the number


_NUMBERS = {
    b"hincrby": _Numbers(_integer_increment, parse_int, HASH_NOT_INTEGER, 0, _integer_sum,
                         lambda new: b"%d" % new, False),
    b"hincrbyfloat": _Numbers(_float_increment, parse_long_double, HASH_NOT_FLOAT,
                              parse_long_double(b"0"), _float_sum, format_long_double, True),
}
#: what HINCRBY and HINCRBYFLOAT share
_HINCR = SpecFields(arity=4, flags="write denyoom fast", key="RW access update")


# (stacked specs register bottom-up: HINCRBY first, as ACL CAT lists them)
@command("hincrbyfloat", _HINCR)
@command("hincrby", _HINCR)
def hincr(ctx: Context, argv: list[bytes]) -> Any:
    """HINCRBYFLOAT key field increment
    Increments the floating point value of a field by a number. Uses 0 as initial value if the field
    doesn't exist.

    HINCRBY key field increment
    Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the
    field doesn't exist.
    """
    numbers = _NUMBERS[argv[0].lower()]
    delta = numbers.increment(argv[3])
    key, field = argv[1], argv[2]
    found = target(ctx, key, HashValue)
    old = None if found is None else found.get(field)
    current = numbers.zero
    if old is not None:
        current = numbers.parse(old)
        if current is None:
            raise CommandError(numbers.not_number)
    new = numbers.add(current, delta)
    text = numbers.text(new)
    # the effect holds the resulting text (Redis propagates an HSET of it)
    set_fields(ctx, key, found, [field, text])
    return text if numbers.reply_text else new


@command("hrandfield", arity=-2, flags="readonly", key="RO access", tips="nondeterministic_output",
         complexity="O(N) where N is the number of fields returned")
def hrandfield(ctx: Context, argv: list[bytes]) -> Any:
    """HRANDFIELD key [count [WITHVALUES]]
    Returns one or more random fields from a hash.
    """
    if len(argv) == 2:
        found = read(ctx, argv[1], HashValue)
        if found is None:
            return None
        return found.field_at(random.randrange(len(found)))
    count = random_count(argv[2])
    withvalues = False
    if len(argv) > 4 or (len(argv) == 4 and argv[3].lower() != b"withvalues"):
        raise CommandError(errors.SYNTAX)
    if len(argv) == 4:
        withvalues = True
        if abs(count) > LLONG_MAX // 2:
            raise CommandError(OUT_OF_RANGE)
    found = read(ctx, argv[1], HashValue)
    if found is None or count == 0:
        return []
    check_repeats(count)
    names = found.names()
    if count < 0 or count < len(names):  # else the whole hash in its order, as Redis answers
        names = pick(names, count)
    if not withvalues:
        return names
    fields = found.mapping()
    if ctx.proto == 3:
        return [[name, fields[name]] for name in names]
    return [item for name in names for item in (name, fields[name])]


#: most elements a negative count (picks with repeats) may ask for: Redis would build any
#: reply until memory runs out; hotkv answers an error instead of exhausting the process
MAX_REPEATED_PICKS = 10_000_000


def random_count(raw: bytes) -> int:
    """HRANDFIELD's and SRANDMEMBER's count: a 64-bit integer other than LLONG_MIN."""
    count = parse_int(raw)
    if count is None:
        raise CommandError(errors.NOT_INTEGER)
    if count == LLONG_MIN:
        raise CommandError(f"ERR value is out of range, value must between {-LLONG_MAX} and {LLONG_MAX}")
    return count


def check_repeats(count: int) -> None:
    """Refuse a negative count asking for more picks with repeats than one reply can hold."""
    if count < -MAX_REPEATED_PICKS:
        raise CommandError(f"ERR count is too large: a negative count asks for at most "
                           f"{MAX_REPEATED_PICKS} elements with repeats")


def pick(names: list[bytes], count: int) -> list[bytes]:
    """``count`` > 0: that many distinct names at most (all of them, shuffled, if fewer);
    ``count`` < 0: ``-count`` names drawn with repeats (Redis's count sign rule)."""
    if count < 0:
        return random.choices(names, k=-count)
    if count >= len(names):
        random.shuffle(names)
        return names
    return random.sample(names, count)


@command("hscan", ELEMENT_SCAN)
def hscan(ctx: Context, argv: list[bytes]) -> Any:
    """HSCAN key cursor [MATCH pattern] [COUNT count]
    Iterates over fields and values of a hash.
    """
    step = scan_step(ctx, argv, HashValue)
    if step is None:
        return [b"0", []]
    next_cursor, names, found = step
    fields = found.mapping()
    return [next_cursor, [item for name in names for item in (name, fields[name])]]


Scanned = TypeVar("Scanned", HashValue, SetValue)


def scan_step(ctx: Context, argv: list[bytes],
              cls: type[Scanned]) -> tuple[bytes, list[bytes], Scanned] | None:
    """HSCAN's and SSCAN's step: ``(next cursor, the names it found that match, the value)``,
    None for a missing key (the cursor is read first, the options after the key, as Redis)."""
    cursor = parse_cursor(argv[2])
    found = read(ctx, argv[1], cls)
    if found is None:
        return None
    pattern, count = scan_options(argv, 3)
    next_cursor, names = found.scan(cursor, count)
    return b"%d" % next_cursor, matching(names, pattern), found
