"""The ACL command, the ACL subsystem (the ``user``/``aclfile`` directives, CONFIG SET
requirepass) and protected mode.

The user table, authentication and the ACL log are in ``acl_table.py``; a user's rules
(Redis's ``ACL SETUSER`` syntax) and checks in ``acl_user.py``. When a
user's channel rules change, its clients subscribed to what it may no longer use are
disconnected, as Redis 7 does.

Every AMEM command's id is its key (position 1), so ``~tenant-a:*`` confines a user to
tenant a's sessions, namespaces, logs and summaries; a read needs an R pattern and a write
a W pattern, from the command's flags. The dispatch point calls ``User.check`` for every
command; AMEM.SCAN filters ids with ``User.key_allowed``.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from hotkv_server.commands.acl_table import UserTable
from hotkv_server.commands.acl_user import (
    NOPERM_KEY,
    PUBSUB_DEFAULT,
    User,
    all_categories,
    commands_in,
    key_permissions,
    noperm_command,
)
from hotkv_server.engine import errors
from hotkv_server.engine.args import parse_int
from hotkv_server.engine.context import Context
from hotkv_server.engine.core import Subsystem
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import container, family
from hotkv_server.engine.replies import OK, Simple

command = family(group="server")

if TYPE_CHECKING:
    from hotkv_server.engine.core import Core

#: what other modules import from here (the user model lives in acl_user.py)
__all__ = ["NOPERM_KEY", "User", "UserTable", "key_permissions", "noperm_command"]

PROTECTED_MODE_DENIED = (
    "DENIED hotkv is running in protected mode because protected mode is enabled and no "
    "password is set for the default user. In this mode connections are only accepted from "
    "the loopback interface. To accept other clients, set a password (requirepass or "
    "ACL SETUSER default >password), or disable protected mode with "
    "'CONFIG SET protected-mode no' from the loopback interface or '--protected-mode no'."
)


def log_denial(ctx: Context, reason: str, obj: str) -> None:
    users = ctx.core.users
    if users is not None:
        users.log_denial(ctx, reason, obj)


def drop_lost_subscribers(core: Core, user: User, current: Context | None) -> None:
    """Disconnect the clients of ``user`` subscribed to a channel, pattern or shard channel
    its rules no longer allow (as Redis 7's ACLKillPubsubClientsIfNeeded)."""
    if user.allchannels:
        return
    for client in list(core.clients.values()):
        subs = client.pubsub
        if subs is None or client.user is not user:
            continue
        lost = any(not user.channel_allowed(p, pattern=True) for p in subs.patterns) or any(
            not user.channel_allowed(c) for c in (*subs.channels, *subs.shard)
        )
        if lost and client.closer is not None:
            client.close_after_reply = True
            if client is not current:
                client.closer()


def _is_loopback(peer: Any) -> bool:
    if not isinstance(peer, tuple) or not peer:
        return True  # unix sockets count as local
    host = str(peer[0])
    return host.startswith("127.") or host in ("::1", "localhost") or host.startswith("::ffff:127.")


def attach(server: Any) -> Subsystem:
    """Install the user table, the user/aclfile directives and the protected-mode gate."""
    from hotkv_server.engine.config import quote_if_needed
    from hotkv_server.engine.errors import StartupError

    core = server.core
    table = UserTable(core)
    core.users = table
    config = core.config
    user_lines = config.user
    aclfile = config.aclfile
    if user_lines and aclfile:
        raise StartupError("configure users with 'user' directives or with 'aclfile', not both")
    try:
        if user_lines:
            lines = ["user " + " ".join(quote_if_needed(w) for w in words) for words in user_lines]
            table.users.update(table.load_lines(lines, "user directive"))
        elif aclfile and os.path.exists(aclfile):
            table.load_file(aclfile)
    except (ValueError, OSError) as exc:
        raise StartupError(f"cannot load ACL users: {exc}") from None

    def gate(peer: Any) -> str | None:
        if not config.protected_mode:
            return None
        if table.default_needs_auth() or _is_loopback(peer):
            return None
        return PROTECTED_MODE_DENIED

    core.connection_gate = gate

    PUBSUB_DEFAULT["allchannels"] = config.acl_pubsub_default == "allchannels"

    return core.attach(AclSettings(table))


class AclSettings(Subsystem):
    """The ACL table's part of CONFIG SET: requirepass and acl-pubsub-default."""

    def __init__(self, table: UserTable) -> None:
        self.table = table

    def config_changed(self, name: str, value: Any) -> None:
        if name == "acl-pubsub-default":
            PUBSUB_DEFAULT["allchannels"] = value == "allchannels"
        if name == "requirepass":  # requirepass is the default user's password, as in Redis
            self.table.set_requirepass(str(value))


# --- the ACL command -------------------------------------------------------------------

container("acl", group="server", summary="A container for Access List Control commands.")


def _table(ctx: Context) -> UserTable:
    users = ctx.core.users
    if not isinstance(users, UserTable):
        raise CommandError("ERR ACL is not available")
    return users


@command("acl|setuser", arity=-3, flags="admin noscript loading stale")
def acl_setuser(ctx: Context, argv: list[bytes]) -> Any:
    """ACL SETUSER username [rule ...]
    Creates and modifies an ACL user and its rules.
    """
    table = _table(ctx)
    name = argv[2].decode("utf-8", "replace")
    if any(c.isspace() for c in name) or not name:
        raise CommandError("ERR Usernames can't contain spaces or null characters")
    rules = [a.decode("utf-8", "replace") for a in argv[3:]]
    user = table.users.get(name)
    if user is None:
        fresh = User.new(name)
        fresh.apply_rules(rules)
        table.users[name] = fresh
    else:
        user.apply_rules(rules)
        drop_lost_subscribers(ctx.core, user, ctx)
    return OK


@command("acl|getuser", arity=3, flags="admin noscript loading stale")
def acl_getuser(ctx: Context, argv: list[bytes]) -> Any:
    """ACL GETUSER username
    Lists the ACL rules of a user.
    """
    user = _table(ctx).users.get(argv[2].decode("utf-8", "replace"))
    if user is None:
        return None
    return {
        "flags": user.flags(),
        "passwords": sorted(user.passwords),
        "commands": user.commands_text(),
        "keys": user.keys_text(),
        "channels": user.channels_text(),
        "selectors": [],
    }


@command("acl|deluser", arity=-3, flags="admin noscript loading stale")
def acl_deluser(ctx: Context, argv: list[bytes]) -> Any:
    """ACL DELUSER username [username ...]
    Deletes ACL users and terminates their connections.
    """
    table = _table(ctx)
    removed = 0
    for raw in argv[2:]:
        name = raw.decode("utf-8", "replace")
        if name == "default":
            raise CommandError("ERR The 'default' user cannot be removed")
    for raw in argv[2:]:
        name = raw.decode("utf-8", "replace")
        if table.users.pop(name, None) is not None:
            removed += 1
            for client in list(ctx.core.clients.values()):
                if client.username == name and client.closer is not None:
                    client.close_after_reply = True
                    if client is not ctx:
                        client.closer()
    return removed


@command("acl|users", arity=2, flags="admin noscript loading stale")
def acl_users(ctx: Context, argv: list[bytes]) -> Any:
    """ACL USERS
    Lists all ACL users.
    """
    return sorted(_table(ctx).users)


@command("acl|whoami", arity=2, flags="noscript loading stale")
def acl_whoami(ctx: Context, argv: list[bytes]) -> Any:
    """ACL WHOAMI
    Returns the authenticated username of the current connection.
    """
    return ctx.username


@command("acl|list", arity=2, flags="admin noscript loading stale")
def acl_list(ctx: Context, argv: list[bytes]) -> Any:
    """ACL LIST
    Dumps the effective rules in ACL file format.
    """
    table = _table(ctx)
    return [table.users[name].describe() for name in sorted(table.users)]


@command("acl|cat", arity=-2, flags="noscript loading stale")
def acl_cat(ctx: Context, argv: list[bytes]) -> Any:
    """ACL CAT [category]
    Lists the ACL categories, or the commands inside a category.
    """
    if len(argv) > 3:
        raise CommandError("ERR unknown subcommand or wrong number of arguments for "
                           f"'{argv[1].decode('utf-8', 'replace')}'. Try ACL HELP.")
    if len(argv) == 2:
        return all_categories()
    category = argv[2].decode("utf-8", "replace").lower().lstrip("@")
    if category not in all_categories():
        raise CommandError(f"ERR Unknown category '{argv[2].decode('utf-8', 'replace')}'")
    return sorted(commands_in(category))


@command("acl|log", arity=-2, flags="admin noscript loading stale")
def acl_log(ctx: Context, argv: list[bytes]) -> Any:
    """ACL LOG [count|RESET]
    Lists recent security events generated due to ACL rules.
    """
    table = _table(ctx)
    limit = len(table.log)
    if len(argv) == 3:
        if argv[2].upper() == b"RESET":
            table.log.clear()
            return OK
        value = parse_int(argv[2])
        if value is None or value < 0:
            raise CommandError(errors.NOT_INTEGER)
        limit = value
    now = time.time()
    return [
        {
            "count": e.count,
            "reason": e.reason,
            "context": e.context,
            "object": e.object,
            "username": e.username,
            "age-seconds": round(now - e.created, 3),
            "client-info": e.client_info,
        }
        for e in list(table.log)[:limit]
    ]


def _aclfile(ctx: Context) -> str:
    path = ctx.core.config.aclfile
    if not path:
        raise CommandError(
            "ERR This Redis instance is not configured to use an ACL file. You may want to "
            "specify users via the ACL SETUSER command and then issue a CONFIG REWRITE "
            "(assuming you have a Redis configuration file set) in order to store users in "
            "the Redis configuration."
        )
    return path


@command("acl|save", arity=2, flags="admin noscript loading stale")
def acl_save(ctx: Context, argv: list[bytes]) -> Any:
    """ACL SAVE
    Saves the effective ACL rules in the configured ACL file.
    """
    path = _aclfile(ctx)
    try:
        _table(ctx).save_file(path)
    except OSError as exc:
        raise CommandError(f"ERR There was an error trying to save the ACLs: {exc.strerror}") from None
    return OK


@command("acl|load", arity=2, flags="admin noscript loading stale")
def acl_load(ctx: Context, argv: list[bytes]) -> Any:
    """ACL LOAD
    Reloads the rules from the configured ACL file.
    """
    path = _aclfile(ctx)
    table = _table(ctx)
    try:
        table.load_file(path)
    except (OSError, ValueError) as exc:
        raise CommandError(f"ERR Error loading ACLs from {path}: {exc}".replace("\n", " ")) from None
    # connected clients keep their names but see the reloaded rules
    for client in ctx.core.clients.values():
        user = table.users.get(client.username)
        if user is None:
            if client.closer is not None and client is not ctx:
                client.closer()
        else:
            client.user = user
            drop_lost_subscribers(ctx.core, user, ctx)
    return OK


@command("acl|genpass", arity=-2, flags="noscript loading stale")
def acl_genpass(ctx: Context, argv: list[bytes]) -> Any:
    """ACL GENPASS [bits]
    Generates a pseudorandom, secure password for ACL users.
    """
    bits = 256
    if len(argv) == 3:
        value = parse_int(argv[2])
        if value is None or not 0 < value <= 4096:
            raise CommandError("ERR ACL GENPASS argument must be the number of bits for the "
                               "output password, a positive number up to 4096")
        bits = value
    return os.urandom((bits + 7) // 8).hex()[: (bits + 3) // 4]


@command("acl|dryrun", arity=-4, flags="admin noscript loading stale")
def acl_dryrun(ctx: Context, argv: list[bytes]) -> Any:
    """ACL DRYRUN username command [arg ...]
    Simulates the execution of a command by a user without executing it.
    """
    from hotkv_server.engine.dispatch import resolve

    table = _table(ctx)
    name = argv[2].decode("utf-8", "replace")
    user = table.users.get(name)
    if user is None:
        raise CommandError(f"ERR User '{name}' not found")
    found = resolve(ctx, argv[3:])
    if isinstance(found, str):
        if found.startswith(("ERR unknown command", "ERR unknown subcommand")):
            # as Redis 7: an unknown subcommand names the container that has no such one
            raise CommandError(f"ERR Command '{argv[3].decode('utf-8', 'replace')}' not found")
        raise CommandError(found)  # wrong number of arguments, as the call itself would get
    denied = user.denial(found, argv[3:])
    if denied is None:
        return OK
    reason, obj = denied
    if reason == "command":
        return f"This user has no permissions to run the '{found.name}' command"
    if reason == "channel":
        return f"This user has no permissions to access the '{obj.decode('utf-8', 'replace')}' channel"
    return f"This user has no permissions to access the '{obj.decode('utf-8', 'replace')}' key"


@command("acl|help", arity=2, flags="loading stale")
def acl_help(ctx: Context, argv: list[bytes]) -> Any:
    """ACL HELP
    Returns helpful text about the different subcommands.
    """
    lines = [
        "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CAT [<category>]", "SETUSER <username> <rule> [<rule> ...]", "GETUSER <username>",
        "DELUSER <username> [<username> ...]", "USERS", "WHOAMI", "LIST", "LOG [<count> | RESET]",
        "SAVE", "LOAD", "GENPASS [<bits>]", "DRYRUN <username> <command> [<arg> ...]", "HELP",
    ]
    return [Simple(line) for line in lines]
