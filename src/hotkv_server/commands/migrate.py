"""DUMP, RESTORE, RESTORE-ASKING and MIGRATE: moving one id's objects between hotkv servers.

In hotkv one name can hold objects in several stores (a string key, a conversation, a
scratchpad, a namespace, an agent's log and summary): DUMP serializes all of them
(``commands/migration.py``), RESTORE recreates them as one ``obj.load`` effect, and MIGRATE
sends them to another node (RESTORE-ASKING, so it works into an importing slot) and then
removes them here with one ``obj.drop`` effect. This is how a cluster slot moves
(``hotkv-cluster reshard``). RESTORE's ttl applies to the string-keyspace part; the other
stores' deadlines travel inside the payload, absolute.
"""

from __future__ import annotations

from typing import Any

from hotkv_server.commands.migration import (
    MigrateError,
    PayloadError,
    decode,
    encode,
    send_payloads,
)
from hotkv_server.engine import errors
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import SpecFields, family
from hotkv_server.engine.replies import OK, Simple
from hotkv_server.engine.slots import migrate_keys
from hotkv_server.stores.effect import ObjDrop, ObjLoad

command = family(group="generic")

BAD_PAYLOAD = "ERR DUMP payload version or checksum are wrong"
BUSYKEY = "BUSYKEY Target key name already exists."


@command("dump", arity=2, flags="readonly", key="RO access", tips="nondeterministic_output",
         since="0.2.0")
def dump(ctx: Context, argv: list[bytes]) -> Any:
    """DUMP key
    Returns a serialized representation of every object stored under a name.
    """
    parts = _live_parts(ctx, argv[1])
    return encode(parts) if parts else None


def _live_parts(ctx: Context, ident: bytes) -> dict[str, Any]:
    """The id's objects that are alive now (an expired one is not dumped nor moved)."""
    db = ctx.db
    now = ctx.now_ms
    parts = db.dump_id(ident)
    return {name: state for name, state in parts.items() if db.stores[name].exists(ident, now)}


def _restore(ctx: Context, argv: list[bytes]) -> Any:
    key, ttl_text, payload = argv[1], argv[2], argv[3]
    replace = absttl = False
    i = 4
    while i < len(argv):
        option = argv[i].lower()
        if option == b"replace":
            replace = True
        elif option == b"absttl":
            absttl = True
        elif option in (b"idletime", b"freq") and i + 1 < len(argv):
            i += 1
            try:
                value = int(argv[i])
            except ValueError:
                raise CommandError(errors.NOT_INTEGER) from None
            if value < 0 or (option == b"freq" and value > 255):
                word = "IDLETIME" if option == b"idletime" else "FREQ"
                limit = "must be >= 0" if option == b"idletime" else "must be >= 0 and <= 255"
                raise CommandError(f"ERR Invalid {word} value, {limit}")
        else:
            raise CommandError(errors.SYNTAX)
        i += 1
    # Redis's order: options, then an existing key, then the ttl, then the payload
    db = ctx.db
    now = ctx.now_ms
    present = any(store.exists(key, now) for store in db.stores.values())
    if present and not replace:
        raise CommandError(BUSYKEY)
    try:
        ttl = int(ttl_text)
    except ValueError:
        raise CommandError(errors.NOT_INTEGER) from None
    if ttl < 0:
        raise CommandError("ERR Invalid TTL value, must be >= 0")
    try:
        parts = decode(payload)
    except PayloadError:
        raise CommandError(BAD_PAYLOAD) from None
    if any(name not in db.stores for name in parts):
        raise CommandError(BAD_PAYLOAD)
    if ttl and "kv" in parts:
        at = ttl if absttl else now + ttl
        parts["kv"] = [parts["kv"][0], at]
    if present:
        ctx.emit(ObjDrop(key))
    kv = parts.get("kv")
    if kv is not None and kv[1] is not None and kv[1] <= now:
        del parts["kv"]  # already expired: as Redis, the key is not created
    if parts:
        ctx.emit(ObjLoad(key, parts))
    return OK


#: what RESTORE and RESTORE-ASKING share
_RESTORE = SpecFields(arity=-4, key="OW update", acl="dangerous", since="0.2.0")


@command("restore", _RESTORE, flags="write denyoom")
def restore(ctx: Context, argv: list[bytes]) -> Any:
    """RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]
    Creates the objects of a name from a DUMP payload.
    """
    return _restore(ctx, argv)


@command("restore-asking", _RESTORE, flags="write denyoom asking")
def restore_asking(ctx: Context, argv: list[bytes]) -> Any:
    """RESTORE-ASKING key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]
    An internal command for migrating keys in a cluster (RESTORE into an importing slot).
    """
    return _restore(ctx, argv)


@command("migrate", arity=-6, flags="write", keys=(3, 3, 1), acl="dangerous",
         key_flags="RW access delete", tips="nondeterministic_output", since="0.2.0")
def migrate(ctx: Context, argv: list[bytes]) -> Any:
    """MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password | AUTH2 username
        password] [KEYS key [key ...]]
    Atomically moves the objects of names to another hotkv server.
    """
    host = argv[1].decode("utf-8", "replace")
    try:
        port, db_index, timeout = int(argv[2]), int(argv[4]), int(argv[5])
    except ValueError:
        raise CommandError(errors.NOT_INTEGER) from None
    copy = replace = False
    auth: list[bytes] = []
    i = 6
    while i < len(argv):
        option = argv[i].lower()
        if option == b"copy":
            copy = True
        elif option == b"replace":
            replace = True
        elif option == b"auth" and i + 1 < len(argv):
            auth = [argv[i + 1]]
            i += 1
        elif option == b"auth2" and i + 2 < len(argv):
            auth = [argv[i + 1], argv[i + 2]]
            i += 2
        elif option == b"keys":
            if argv[3]:
                raise CommandError("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
            break
        else:
            raise CommandError(errors.SYNTAX)
        i += 1
    if db_index != 0:
        raise CommandError("ERR DB index is out of range")
    if timeout <= 0:
        timeout = 1000
    items = []
    for key in migrate_keys(argv):
        parts = _live_parts(ctx, key)
        if parts:
            items.append((key, encode(parts)))
    if not items:
        return Simple("NOKEY")
    try:
        send_payloads(host, port, timeout, auth, items, replace)
    except MigrateError as exc:
        raise CommandError(str(exc)) from None
    if not copy:
        for key, _payload in items:
            ctx.emit(ObjDrop(key))
    return OK
