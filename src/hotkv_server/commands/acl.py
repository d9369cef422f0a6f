"""ACL users, authentication, protected mode, and the ACL command.

Rules follow Redis's ``ACL SETUSER`` syntax: ``on|off``, ``>pass``, ``<pass``, ``#sha256``,
``!sha256``, ``nopass``, ``resetpass``, ``~pattern``, ``%R~``/``%W~``/``%RW~pattern``,
``allkeys``, ``resetkeys``, ``+cmd``, ``-cmd``, ``+cmd|sub``, ``+@category``, ``-@category``,
``allcommands``, ``nocommands``, ``reset`` (channel rules ``&pattern``, ``allchannels``,
``resetchannels`` are accepted; hotkv has no pub/sub).

Every AMEM command's id is its key (position 1), so ``~tenant-a:*`` confines a user to
tenant a's sessions, namespaces, logs and summaries; a read needs an R pattern and a write
a W pattern, from the command's flags. The dispatch point calls ``User.check`` for every
command; AMEM.SCAN filters ids with ``User.key_allowed``.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hotkv_server.commands.glob import glob_match
from hotkv_server.commands.introspection import call_key_flags
from hotkv_server.engine import errors
from hotkv_server.engine.args import parse_int
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import COMMANDS, CommandSpec, command, container
from hotkv_server.engine.replies import OK, Simple

if TYPE_CHECKING:
    from hotkv_server.engine.core import Core

NOPERM_KEY = "NOPERM this user has no permissions to access one of the keys used as arguments"
ACL_LOG_MAX = 128
#: failed AUTH attempts per client address in one window before attempts are refused unchecked
AUTH_FAILURE_LIMIT = 20
AUTH_FAILURE_WINDOW_S = 60.0

PROTECTED_MODE_DENIED = (
    "DENIED hotkv is running in protected mode because protected mode is enabled and no "
    "password is set for the default user. In this mode connections are only accepted from "
    "the loopback interface. To accept other clients, set a password (requirepass or "
    "ACL SETUSER default >password), or disable protected mode with "
    "'CONFIG SET protected-mode no' from the loopback interface or '--protected-mode no'."
)


def noperm_command(name: str) -> str:
    return f"NOPERM this user has no permissions to run the '{name}' command"


def all_command_names() -> list[str]:
    names = []
    for spec in COMMANDS.values():
        names.append(spec.name)
        names.extend(sub.name for sub in spec.subcommands.values())
    return names


def all_categories() -> list[str]:
    cats: set[str] = set()
    for spec in COMMANDS.values():
        cats.update(spec.categories)
        for sub in spec.subcommands.values():
            cats.update(sub.categories)
    return sorted(cats)


def _commands_in(category: str) -> list[str]:
    out: list[str] = []
    for spec in COMMANDS.values():
        if spec.subcommands:
            out.extend(s.name for s in spec.subcommands.values() if category in s.categories)
            if category in spec.categories:
                out.append(spec.name)
        elif category in spec.categories:
            out.append(spec.name)
    return out


@dataclass
class KeyPattern:
    pattern: bytes
    read: bool
    write: bool

    def render(self) -> str:
        text = self.pattern.decode("utf-8", "replace")
        if self.read and self.write:
            return f"~{text}"
        return f"%{'R' if self.read else ''}{'W' if self.write else ''}~{text}"


@dataclass
class User:
    """One ACL user. ``check`` is on the hot path: the common cases return at once."""

    name: str
    enabled: bool = False
    nopass: bool = False
    passwords: set[str] = field(default_factory=set)  # sha256 hex digests
    key_patterns: list[KeyPattern] = field(default_factory=list)
    allkeys: bool = False
    allcommands: bool = False
    allowed: set[str] = field(default_factory=set)
    command_rules: list[str] = field(default_factory=list)
    allchannels: bool = False
    base_all: bool = False  # the command rules start from +@all (else from -@all)
    #: False when every key and every command is allowed: the dispatch point skips check()
    restricted: bool = True

    # --- rules ----------------------------------------------------------------------
    def apply_rules(self, rules: list[str]) -> None:
        """Apply ``ACL SETUSER`` rules in order; on a bad rule nothing changes."""
        staged = self.copy()
        for rule in rules:
            staged._apply(rule)
        staged.restricted = not (staged.allkeys and set(all_command_names()) <= staged.allowed)
        self.__dict__.update(staged.__dict__)

    def copy(self) -> User:
        return User(
            self.name,
            self.enabled,
            self.nopass,
            set(self.passwords),
            [KeyPattern(k.pattern, k.read, k.write) for k in self.key_patterns],
            self.allkeys,
            self.allcommands,
            set(self.allowed),
            list(self.command_rules),
            self.allchannels,
            self.base_all,
        )

    def _apply(self, rule: str) -> None:
        lowered = rule.lower()
        if lowered == "on":
            self.enabled = True
        elif lowered == "off":
            self.enabled = False
        elif lowered == "nopass":
            self.nopass = True
            self.passwords.clear()
        elif lowered == "resetpass":
            self.nopass = False
            self.passwords.clear()
        elif rule.startswith(">"):
            self.passwords.add(hashlib.sha256(rule[1:].encode()).hexdigest())
            self.nopass = False
        elif rule.startswith("<"):
            self.passwords.discard(hashlib.sha256(rule[1:].encode()).hexdigest())
        elif rule.startswith("#"):
            digest = rule[1:].lower()
            if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
                raise CommandError(_setuser_error(rule, "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"))
            self.passwords.add(digest)
            self.nopass = False
        elif rule.startswith("!"):
            self.passwords.discard(rule[1:].lower())
        elif lowered == "allkeys" or rule == "~*":
            self.allkeys = True
            self.key_patterns = [KeyPattern(b"*", True, True)]
        elif lowered == "resetkeys":
            self.allkeys = False
            self.key_patterns = []
        elif rule.startswith("~"):
            self._add_pattern(rule[1:], True, True)
        elif rule.startswith("%"):
            perms, sep, pattern = rule[1:].partition("~")
            if not sep or not perms or any(c not in "RWrw" for c in perms):
                raise CommandError(_setuser_error(rule, "Syntax error"))
            self._add_pattern(pattern, "R" in perms.upper(), "W" in perms.upper())
        elif lowered in ("allchannels", "resetchannels") or rule.startswith("&"):
            self.allchannels = lowered == "allchannels" or rule == "&*"
        elif lowered in ("allcommands", "+@all"):
            self.allcommands = True
            self.base_all = True
            self.allowed = set(all_command_names())
            self.command_rules = []
        elif lowered in ("nocommands", "-@all"):
            self.allcommands = False
            self.base_all = False
            self.allowed = set()
            self.command_rules = []
        elif lowered == "reset":
            fresh = User(self.name)
            self.__dict__.update(fresh.__dict__)
        elif rule.startswith(("+@", "-@")):
            category = lowered[2:]
            if category not in all_categories():
                raise CommandError(_setuser_error(rule, "Unknown command or category name in ACL"))
            names = _commands_in(category)
            if rule[0] == "+":
                self.allowed.update(names)
            else:
                self.allowed.difference_update(names)
                self.allcommands = False
            self.command_rules.append(lowered)
        elif rule.startswith(("+", "-")):
            fullname = lowered[1:]
            parent, _, sub = fullname.partition("|")
            spec = COMMANDS.get(parent)
            if spec is None or (sub and sub not in spec.subcommands):
                raise CommandError(_setuser_error(rule, "Unknown command or category name in ACL"))
            names = [fullname] if sub else [parent, *(s.name for s in spec.subcommands.values())]
            if rule[0] == "+":
                self.allowed.update(names)
            else:
                self.allowed.difference_update(names)
                self.allcommands = False
            self.command_rules.append(lowered)
        else:
            raise CommandError(_setuser_error(rule, "Syntax error"))

    def _add_pattern(self, pattern: str, read: bool, write: bool) -> None:
        if self.allkeys and read and write:
            raise CommandError(_setuser_error(
                "~" + pattern,
                "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and "
                "does not have any effect. Try 'resetkeys' to start with an empty list of patterns",
            ))
        raw = pattern.encode()
        for known in self.key_patterns:  # as Redis: the same pattern again adds its flags
            if known.pattern == raw:
                known.read = known.read or read
                known.write = known.write or write
                break
        else:
            known = KeyPattern(raw, read, write)
            self.key_patterns.append(known)
        if pattern == "*" and known.read and known.write:
            self.allkeys = True

    # --- checks ---------------------------------------------------------------------
    def check(self, ctx: Context, spec: CommandSpec, argv: list[bytes]) -> str | None:
        """None if this user may run this call, else the NOPERM message (and an ACL LOG entry)."""
        denied = self.denial(spec, argv)
        if denied is None:
            return None
        reason, obj = denied
        log_denial(ctx, reason, obj.decode("utf-8", "replace"))
        return noperm_command(spec.name) if reason == "command" else NOPERM_KEY

    def denial(self, spec: CommandSpec, argv: list[bytes]) -> tuple[str, bytes] | None:
        """None if this user may run this call, else what is denied, as ACL LOG names it:
        ``("command", name)`` or ``("key", the first key refused)``. Logs nothing (ACL
        DRYRUN asks this too)."""
        if spec.name not in self.allowed and not spec.no_auth:
            # commands that work before authentication (AUTH, HELLO, QUIT) are never denied
            return "command", spec.name.encode()
        if self.allkeys or spec.first_key <= 0:
            return None
        read, write = key_permissions(spec, argv)
        for key in spec.keys_of(argv):
            if not self.key_allowed(key, read=read, write=write):
                return "key", key
        return None

    def key_allowed(self, key: bytes, *, read: bool = True, write: bool = False) -> bool:
        """Whether one pattern matching ``key`` grants every permission asked (as Redis,
        a pattern named twice with %R~ and %W~ holds both)."""
        if self.allkeys:
            return True
        for pat in self.key_patterns:
            if (not read or pat.read) and (not write or pat.write) and glob_match(pat.pattern, key):
                return True
        return False

    def password_ok(self, password: bytes) -> bool:
        if self.nopass:
            return True
        digest = hashlib.sha256(password).hexdigest()
        return any(hmac.compare_digest(digest, known) for known in self.passwords)

    # --- rendering --------------------------------------------------------------------
    def flags(self) -> list[str]:
        out = ["on" if self.enabled else "off"]
        if self.nopass:
            out.append("nopass")
        return out

    def commands_text(self) -> str:
        base = "+@all" if self.base_all else "-@all"
        return " ".join([base, *self.command_rules])

    def keys_text(self) -> str:
        return " ".join(k.render() for k in self.key_patterns)

    def describe(self) -> str:
        """The ``ACL LIST`` line (also the aclfile line) for this user."""
        parts = [f"user {self.name}", *self.flags()]
        parts.extend(f"#{p}" for p in sorted(self.passwords))
        keys = self.keys_text()
        if keys:
            parts.append(keys)
        parts.append("&*" if self.allchannels else "resetchannels")
        parts.append(self.commands_text())
        return " ".join(parts)


def _setuser_error(rule: str, reason: str) -> str:
    return f"ERR Error in ACL SETUSER modifier '{rule}': {reason}"


def default_user(requirepass: str) -> User:
    user = User("default")
    user.apply_rules(["on", "~*", "&*", "+@all"])
    if requirepass:
        user.apply_rules([">" + requirepass])
    else:
        user.apply_rules(["nopass"])
    return user


@dataclass
class LogEntry:
    count: int
    reason: str
    context: str
    object: str
    username: str
    created: float
    updated: float
    client_info: str


class UserTable:
    """Every user of the server, the ACL log, and the AUTH failure counters."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self.users: dict[str, User] = {"default": default_user(core.config.values["requirepass"])}
        self.log: deque[LogEntry] = deque()
        self.failures: dict[str, tuple[int, float]] = {}

    def default_needs_auth(self) -> bool:
        user = self.users["default"]
        return not (user.enabled and user.nopass)

    def initial_user(self) -> User:
        return self.users["default"]

    def set_requirepass(self, password: str) -> None:
        user = self.users["default"]
        user.apply_rules(["resetpass", ">" + password] if password else ["nopass"])

    def authenticate(self, ctx: Context, username: bytes | None, password: bytes) -> str | None:
        """Log ``ctx`` in as ``username`` (default when None); None on success, else the error."""
        name = "default" if username is None else username.decode("utf-8", "replace")
        host = ctx.addr.rsplit(":", 1)[0]
        now = time.monotonic()
        count, since = self.failures.get(host, (0, now))
        if now - since > AUTH_FAILURE_WINDOW_S:
            count, since = 0, now
        if username is None and self.users["default"].nopass and not self.core.config.values["requirepass"]:
            return errors.AUTH_NOT_CONFIGURED
        user = self.users.get(name)
        if count >= AUTH_FAILURE_LIMIT:
            # too many guesses from this address: refuse without checking until the window ends
            self._log(ctx, "auth", "AUTH", name)
            return errors.WRONGPASS
        if user is None or not user.enabled or not user.password_ok(password):
            self.failures[host] = (count + 1, since)
            self._log(ctx, "auth", "AUTH", name)
            return errors.WRONGPASS
        self.failures.pop(host, None)
        ctx.user = user
        ctx.username = user.name
        ctx.authenticated = True
        return None

    def _log(self, ctx: Context, reason: str, obj: str, username: str) -> None:
        now = time.time()
        context = "multi" if ctx.multi is not None else "toplevel"
        for entry in self.log:
            if (entry.reason, entry.context, entry.object, entry.username) == (
                reason, context, obj, username
            ) and now - entry.updated < 60:
                entry.count += 1
                entry.updated = now
                return
        from hotkv_server.commands.connection import client_line

        self.log.appendleft(
            LogEntry(1, reason, context, obj, username, now, now, client_line(ctx, ctx.now_ms))
        )
        while len(self.log) > ACL_LOG_MAX:
            self.log.pop()

    # --- files ----------------------------------------------------------------------
    def load_lines(self, lines: list[str], source: str) -> dict[str, User]:
        from hotkv_server.engine.config import split_line

        users: dict[str, User] = {}
        for number, raw in enumerate(lines, start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            words = split_line(line)
            if len(words) < 2 or words[0] != "user":
                raise ValueError(f"{source}:{number}: expected 'user <name> [rules ...]'")
            user = User(words[1])
            try:
                user.apply_rules(words[2:])
            except CommandError as exc:
                raise ValueError(f"{source}:{number}: {exc.message}") from None
            users[user.name] = user
        return users

    def load_file(self, path: str) -> None:
        with open(path, encoding="utf-8") as fh:
            users = self.load_lines(fh.read().splitlines(), path)
        if "default" not in users:
            users["default"] = default_user(self.core.config.values["requirepass"])
        self.users = users

    def save_file(self, path: str) -> None:
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as fh:
            for name in sorted(self.users):
                fh.write(self.users[name].describe() + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)


def log_denial(ctx: Context, reason: str, obj: str) -> None:
    users = ctx.core.users
    if users is not None:
        users._log(ctx, reason, obj, ctx.username)


def _is_loopback(peer: Any) -> bool:
    if not isinstance(peer, tuple) or not peer:
        return True  # unix sockets count as local
    host = str(peer[0])
    return host.startswith("127.") or host in ("::1", "localhost") or host.startswith("::ffff:127.")


def attach(server: Any) -> None:
    """Install the user table, the user/aclfile directives and the protected-mode gate."""
    from hotkv_server.engine.config import quote_if_needed
    from hotkv_server.engine.errors import StartupError

    core = server.core
    table = UserTable(core)
    core.users = table
    config = core.config
    user_lines = config.values["user"]
    aclfile = config.values["aclfile"]
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
        if not config.values["protected-mode"]:
            return None
        if table.default_needs_auth() or _is_loopback(peer):
            return None
        return PROTECTED_MODE_DENIED

    core.extras["connection_gate"] = gate

    def on_config_set(name: str, value: Any) -> None:
        if name == "requirepass":  # requirepass is the default user's password, as in Redis
            table.set_requirepass(str(value))

    core.extras.setdefault("config_listeners", []).append(on_config_set)
    return None


# --- the ACL command -------------------------------------------------------------------

container("acl", group="server", summary="A container for Access List Control commands.")


def _table(ctx: Context) -> UserTable:
    users = ctx.core.users
    if users is None:
        raise CommandError("ERR ACL is not available")
    table: UserTable = users
    return table


@command("acl|setuser", arity=-3, flags="admin noscript loading stale", group="server",
         summary="Creates and modifies an ACL user and its rules.", syntax="username [rule ...]")
def acl_setuser(ctx: Context, argv: list[bytes]) -> Any:
    """ACL SETUSER username [rule ...]"""
    table = _table(ctx)
    name = argv[2].decode("utf-8", "replace")
    if any(c.isspace() for c in name) or not name:
        raise CommandError("ERR Usernames can't contain spaces or null characters")
    rules = [a.decode("utf-8", "replace") for a in argv[3:]]
    user = table.users.get(name)
    if user is None:
        fresh = User(name)
        fresh.apply_rules(rules)
        table.users[name] = fresh
    else:
        user.apply_rules(rules)
        if name == "default" and not user.nopass:
            pass
    return OK


@command("acl|getuser", arity=3, flags="admin noscript loading stale", group="server",
         summary="Lists the ACL rules of a user.", syntax="username")
def acl_getuser(ctx: Context, argv: list[bytes]) -> Any:
    """ACL GETUSER username"""
    user = _table(ctx).users.get(argv[2].decode("utf-8", "replace"))
    if user is None:
        return None
    flags = user.flags()
    if user.allkeys:
        flags.append("allkeys")
    if user.allchannels:
        flags.append("allchannels")
    if user.allcommands and not user.command_rules:
        flags.append("allcommands")
    return {
        "flags": flags,
        "passwords": sorted(user.passwords),
        "commands": user.commands_text(),
        "keys": user.keys_text(),
        "channels": "&*" if user.allchannels else "",
        "selectors": [],
    }


@command("acl|deluser", arity=-3, flags="admin noscript loading stale", group="server",
         summary="Deletes ACL users and terminates their connections.", syntax="username [username ...]")
def acl_deluser(ctx: Context, argv: list[bytes]) -> Any:
    """ACL DELUSER username [username ...]"""
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


@command("acl|users", arity=2, flags="admin noscript loading stale", group="server",
         summary="Lists all ACL users.")
def acl_users(ctx: Context, argv: list[bytes]) -> Any:
    """ACL USERS"""
    return sorted(_table(ctx).users)


@command("acl|whoami", arity=2, flags="noscript loading stale", group="server",
         summary="Returns the authenticated username of the current connection.")
def acl_whoami(ctx: Context, argv: list[bytes]) -> Any:
    """ACL WHOAMI"""
    return ctx.username


@command("acl|list", arity=2, flags="admin noscript loading stale", group="server",
         summary="Dumps the effective rules in ACL file format.")
def acl_list(ctx: Context, argv: list[bytes]) -> Any:
    """ACL LIST"""
    table = _table(ctx)
    return [table.users[name].describe() for name in sorted(table.users)]


@command("acl|cat", arity=-2, flags="noscript loading stale", group="server",
         summary="Lists the ACL categories, or the commands inside a category.", syntax="[category]")
def acl_cat(ctx: Context, argv: list[bytes]) -> Any:
    """ACL CAT [category]"""
    if len(argv) == 2:
        return all_categories()
    category = argv[2].decode("utf-8", "replace").lower().lstrip("@")
    if category not in all_categories():
        raise CommandError(f"ERR Unknown category '{argv[2].decode('utf-8', 'replace')}'")
    return sorted(_commands_in(category))


@command("acl|log", arity=-2, flags="admin noscript loading stale", group="server",
         summary="Lists recent security events generated due to ACL rules.", syntax="[count|RESET]")
def acl_log(ctx: Context, argv: list[bytes]) -> Any:
    """ACL LOG [count|RESET]"""
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
    path: str = ctx.core.config.values["aclfile"]
    if not path:
        raise CommandError(
            "ERR This hotkv instance is not configured to use an ACL file. Set the 'aclfile' "
            "directive, or use ACL SETUSER and CONFIG REWRITE with 'user' directives."
        )
    return path


@command("acl|save", arity=2, flags="admin noscript loading stale", group="server",
         summary="Saves the effective ACL rules in the configured ACL file.")
def acl_save(ctx: Context, argv: list[bytes]) -> Any:
    """ACL SAVE"""
    path = _aclfile(ctx)
    try:
        _table(ctx).save_file(path)
    except OSError as exc:
        raise CommandError(f"ERR There was an error trying to save the ACLs: {exc.strerror}") from None
    return OK


@command("acl|load", arity=2, flags="admin noscript loading stale", group="server",
         summary="Reloads the rules from the configured ACL file.")
def acl_load(ctx: Context, argv: list[bytes]) -> Any:
    """ACL LOAD"""
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
    return OK


@command("acl|genpass", arity=-2, flags="noscript loading stale", group="server",
         summary="Generates a pseudorandom, secure password for ACL users.", syntax="[bits]")
def acl_genpass(ctx: Context, argv: list[bytes]) -> Any:
    """ACL GENPASS [bits]"""
    bits = 256
    if len(argv) == 3:
        value = parse_int(argv[2])
        if value is None or not 0 < value <= 4096:
            raise CommandError("ERR ACL GENPASS argument must be the number of bits for the "
                               "output password, a positive number up to 4096")
        bits = value
    return os.urandom((bits + 7) // 8).hex()[: (bits + 3) // 4]


@command("acl|dryrun", arity=-4, flags="admin noscript loading stale", group="server",
         summary="Simulates the execution of a command by a user without executing it.",
         syntax="username command [arg ...]")
def acl_dryrun(ctx: Context, argv: list[bytes]) -> Any:
    """ACL DRYRUN username command [arg ...]"""
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
    return f"This user has no permissions to access the '{obj.decode('utf-8', 'replace')}' key"


def key_permissions(spec: CommandSpec, argv: list[bytes]) -> tuple[bool, bool]:
    """The (read, write) permissions a call needs on its keys, from its key spec flags as
    Redis 7 takes them: ``access`` reads the data; ``insert``, ``delete`` and ``update``
    write it; a key only looked at (EXISTS, TYPE, STRLEN: ``RO`` alone) needs neither, so
    any pattern matching it will do."""
    flags = call_key_flags(spec, argv)
    return "access" in flags, any(f in flags for f in ("insert", "delete", "update"))


@command("acl|help", arity=2, flags="loading stale", group="server",
         summary="Returns helpful text about the different subcommands.")
def acl_help(ctx: Context, argv: list[bytes]) -> Any:
    """ACL HELP"""
    lines = [
        "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CAT [<category>]", "SETUSER <username> <rule> [<rule> ...]", "GETUSER <username>",
        "DELUSER <username> [<username> ...]", "USERS", "WHOAMI", "LIST", "LOG [<count> | RESET]",
        "SAVE", "LOAD", "GENPASS [<bits>]", "DRYRUN <username> <command> [<arg> ...]", "HELP",
    ]
    return [Simple(line) for line in lines]
