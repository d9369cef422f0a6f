"""One ACL user: its rules as Redis 7's ``ACL SETUSER`` parses them, its checks, its text.

Rules: ``on|off``, ``>pass``, ``<pass``, ``#sha256``, ``!sha256``, ``nopass``, ``resetpass``,
``~pattern``, ``%R~``/``%W~``/``%RW~pattern``, ``allkeys``, ``resetkeys``, ``&pattern``,
``allchannels``, ``resetchannels``, ``+cmd``, ``-cmd``, ``+cmd|sub``, ``+cmd|first-arg``,
``+@category``, ``-@category``, ``allcommands``, ``nocommands``, ``sanitize-payload``,
``skip-sanitize-payload``, ``reset``.

Command rules compile into the set of commands allowed (and first arguments allowed); ACL
LIST and GETUSER describe that set as Redis 7.0 does, not the rules as typed: from
``+@all`` or ``-@all``, the categories that fit best, then single commands for the rest
(``+incr -incr`` reads ``-@all``, ``+@all -config|get +config|get`` reads ``+@all``).

Channel rules gate PUBLISH/SUBSCRIBE/SSUBSCRIBE (a channel matching one of the user's
glob patterns) and PSUBSCRIBE (the pattern itself must be one of them, literally).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hotkv_server.commands.introspection import call_key_flags
from hotkv_server.engine.errors import NOPERM_CHANNEL, CommandError
from hotkv_server.engine.glob import glob_match
from hotkv_server.engine.pubsub import PATTERN
from hotkv_server.engine.registry import (
    COMMANDS,
    HOTKV_CATEGORIES,
    REDIS_CATEGORIES,
    CommandSpec,
)

NOPERM_KEY = "NOPERM this user has no permissions to access one of the keys used as arguments"
#: what ``acl-pubsub-default`` gives a new user (and ``reset``): set by the ACL module
PUBSUB_DEFAULT = {"allchannels": False}


def noperm_command(name: str) -> str:
    return f"NOPERM this user has no permissions to run the '{name}' command"


def all_command_names() -> list[str]:
    names = []
    for spec in COMMANDS.values():
        names.append(spec.name)
        names.extend(sub.name for sub in spec.subcommands.values())
    return names


def all_categories() -> list[str]:
    """Redis's 21 categories in ACL CAT's order, hotkv's own, then any a command declares."""
    cats: set[str] = set()
    for spec in COMMANDS.values():
        cats.update(spec.categories)
        for sub in spec.subcommands.values():
            cats.update(sub.categories)
    known = [*REDIS_CATEGORIES, *HOTKV_CATEGORIES]
    return known + sorted(cats.difference(known))


def commands_in(category: str) -> list[str]:
    out: list[str] = []
    for spec in COMMANDS.values():
        if spec.subcommands:
            out.extend(s.name for s in spec.subcommands.values() if category in s.categories)
            if category in spec.categories:
                out.append(spec.name)
        elif category in spec.categories:
            out.append(spec.name)
    return out


def setuser_error(rule: str, reason: str) -> str:
    return f"ERR Error in ACL SETUSER modifier '{rule}': {reason}"


_UNKNOWN = "Unknown command or category name in ACL"


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


#: (commands allowed whole, command -> first arguments allowed): what command rules give
Permissions = tuple[set[str], dict[str, set[bytes]]]


@dataclass
class User:
    """One ACL user. ``check`` is on the hot path: the common cases return at once."""

    name: str
    enabled: bool = False
    nopass: bool = False
    #: "", "sanitize-payload" or "skip-sanitize-payload" (accepted; payloads are not sanitized)
    sanitize: str = ""
    passwords: set[str] = field(default_factory=set)  # sha256 hex digests
    key_patterns: list[KeyPattern] = field(default_factory=list)
    allkeys: bool = False
    allcommands: bool = False
    allowed: set[str] = field(default_factory=set)
    #: command -> lower-case first arguments allowed although the command is not (+select|0)
    first_args: dict[str, set[bytes]] = field(default_factory=dict)
    allchannels: bool = False
    channel_patterns: list[bytes] = field(default_factory=list)
    base_all: bool = False  # the command rules start from +@all (else from -@all)
    #: False when every key, channel and command is allowed: the dispatch point skips check()
    restricted: bool = True

    @classmethod
    def new(cls, name: str) -> User:
        """A user as ``ACL SETUSER`` creates it: off, no rights, channels per acl-pubsub-default."""
        return cls(name, allchannels=PUBSUB_DEFAULT["allchannels"])

    # --- rules ----------------------------------------------------------------------
    def apply_rules(self, rules: Sequence[str]) -> None:
        """Apply ``ACL SETUSER`` rules in order; on a bad rule nothing changes."""
        staged = self.copy()
        for rule in rules:
            staged._apply(rule)
        staged.restricted = not (
            staged.allkeys and staged.allchannels and set(all_command_names()) <= staged.allowed
        )
        self.__dict__.update(staged.__dict__)

    def copy(self) -> User:
        return User(
            self.name, self.enabled, self.nopass, self.sanitize, set(self.passwords),
            [KeyPattern(k.pattern, k.read, k.write) for k in self.key_patterns],
            self.allkeys, self.allcommands, set(self.allowed),
            {cmd: set(args) for cmd, args in self.first_args.items()},
            self.allchannels, list(self.channel_patterns),
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
        elif lowered in ("sanitize-payload", "skip-sanitize-payload"):
            self.sanitize = lowered
        elif rule.startswith(">"):
            self.passwords.add(hashlib.sha256(rule[1:].encode()).hexdigest())
            self.nopass = False
        elif rule.startswith("<"):
            self.passwords.discard(hashlib.sha256(rule[1:].encode()).hexdigest())
        elif rule.startswith("#"):
            digest = rule[1:].lower()
            if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
                raise CommandError(setuser_error(rule, "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"))
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
                raise CommandError(setuser_error(rule, "Syntax error"))
            self._add_pattern(pattern, "R" in perms.upper(), "W" in perms.upper())
        elif lowered == "allchannels" or rule == "&*":
            self.allchannels = True
            self.channel_patterns = []
        elif lowered == "resetchannels":
            self.allchannels = False
            self.channel_patterns = []
        elif rule.startswith("&"):
            if self.allchannels:
                raise CommandError(setuser_error(
                    rule, "Adding a pattern after the * pattern (or the 'allchannels' flag) is "
                    "not valid and does not have any effect. Try 'resetchannels' to start with "
                    "an empty list of channels"))
            raw = rule[1:].encode()
            if raw not in self.channel_patterns:
                self.channel_patterns.append(raw)
        elif lowered in ("allcommands", "+@all"):
            self.allcommands = True
            self.base_all = True
            self.allowed = set(all_command_names())
            self.first_args = {}
        elif lowered in ("nocommands", "-@all"):
            self.allcommands = False
            self.base_all = False
            self.allowed = set()
            self.first_args = {}
        elif lowered == "reset":
            fresh = User.new(self.name)
            fresh.sanitize = "sanitize-payload"
            self.__dict__.update(fresh.__dict__)
        elif rule.startswith(("+", "-")):
            self._command_rule(rule, lowered)
        else:
            raise CommandError(setuser_error(rule, "Syntax error"))

    def _command_rule(self, rule: str, lowered: str) -> None:
        """``+cmd``, ``-cmd``, ``+cmd|sub``, ``+cmd|first-arg``, ``+@cat``, ``-@cat``."""
        _change(self.allowed, self.first_args, lowered, rule)
        if lowered[0] == "-":
            self.allcommands = False

    def _add_pattern(self, pattern: str, read: bool, write: bool) -> None:
        if self.allkeys and read and write:
            raise CommandError(setuser_error(
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
    def check(self, ctx: Any, spec: CommandSpec, argv: list[bytes]) -> str | None:
        """None if this user may run this call, else the NOPERM message (and an ACL LOG entry)."""
        denied = self.denial(spec, argv)
        if denied is None:
            return None
        reason, obj = denied
        users = ctx.core.users
        if users is not None:
            users.log_denial(ctx, reason, obj.decode("utf-8", "replace"))
        if reason == "command":
            return noperm_command(spec.name)
        return NOPERM_CHANNEL if reason == "channel" else NOPERM_KEY

    def denial(self, spec: CommandSpec, argv: list[bytes]) -> tuple[str, bytes] | None:
        """None if this user may run this call, else what is denied, as ACL LOG names it:
        ``("command", name)``, ``("key", the first key refused)`` or ``("channel", ...)``.
        Logs nothing (ACL DRYRUN asks this too)."""
        if spec.name not in self.allowed and not spec.no_auth and not self._first_arg_ok(spec, argv):
            # commands that work before authentication (AUTH, HELLO, QUIT) are never denied
            return "command", spec.name.encode()
        if not self.allkeys and spec.key_specs and spec.key_flags != ("not_key",):
            if len(spec.key_specs) == 1:
                read, write = key_permissions(spec, argv)
                for key in spec.keys_of(argv):
                    if not self.key_allowed(key, read=read, write=write):
                        return "key", key
            else:
                # several key groups (RENAME's source and destination ...): each its own flags
                for key, flags in spec.keys_with_flags(argv):
                    read, write = flag_permissions(flags)
                    if not self.key_allowed(key, read=read, write=write):
                        return "key", key
        if not self.allchannels and spec.is_pubsub:
            from hotkv_server.commands.pubsub import channels_of

            found = channels_of(spec.name, argv)
            if found is not None:
                kind, names = found
                for name in names:
                    if not self.channel_allowed(name, pattern=kind == PATTERN):
                        return "channel", name
        return None

    def _first_arg_ok(self, spec: CommandSpec, argv: list[bytes]) -> bool:
        args = self.first_args.get(spec.name)
        return args is not None and len(argv) > 1 and argv[1].lower() in args

    def key_allowed(self, key: bytes, *, read: bool = True, write: bool = False) -> bool:
        """Whether one pattern matching ``key`` grants every permission asked (as Redis,
        a pattern named twice with %R~ and %W~ holds both)."""
        if self.allkeys:
            return True
        for pat in self.key_patterns:
            if (not read or pat.read) and (not write or pat.write) and glob_match(pat.pattern, key):
                return True
        return False

    def channel_allowed(self, name: bytes, *, pattern: bool = False) -> bool:
        """A channel matching one of the user's channel patterns; a subscribed pattern must
        be one of them literally (as Redis: ``&news.*`` allows PSUBSCRIBE news.* only)."""
        if self.allchannels:
            return True
        if pattern:
            return name in self.channel_patterns
        return any(glob_match(p, name) for p in self.channel_patterns)

    def channel_visible(self, name: bytes, *, pattern: bool = False) -> bool:
        """Whether PUBSUB CHANNELS/NUMSUB may name this channel to the user: one it may use,
        and for a notification channel one naming a key or id it may read."""
        if not self.channel_allowed(name, pattern=pattern):
            return False
        if self.allkeys:
            return True
        from hotkv_server.engine.notify import key_in_channel

        key = key_in_channel(name)
        return key is None or self.key_allowed(key)

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
        if self.sanitize:
            out.append(self.sanitize)
        return out

    def commands_text(self) -> str:
        """The allowed commands as Redis 7.0 writes them (ACLDescribeSelectorCommandRules):
        the base, then while some category not yet used has more commands agreeing with
        the user than not, the one with the fewest disagreements (most agreements on a
        tie), then single commands (and first arguments) to make up the difference. Redis
        lists the single commands in its hash-table order; here they are sorted."""
        additive = not self.base_all
        parts = ["-@all" if additive else "+@all"]
        every = all_command_names()
        fake = set() if additive else set(every)
        rest = set(self.allowed)  # what the categories chosen so far have not explained
        used: set[str] = set()
        members = {cat: set(commands_in(cat)) for cat in all_categories()}
        while True:
            best, fewest, most = None, 1 << 62, 0
            for cat, names in members.items():
                if cat in used or not names:
                    continue
                on = len(names & rest)
                off = len(names) - on
                diff, same = (off, on) if additive else (on, off)
                if same > diff and (diff < fewest or (diff == fewest and same > most)):
                    best, fewest, most = cat, diff, same
            if best is None:
                break
            used.add(best)
            if additive:
                fake |= members[best]
                rest -= members[best]
            else:
                fake -= members[best]
                rest |= members[best]
            parts.append(("+@" if additive else "-@") + best)
        for name in sorted(COMMANDS):
            spec = COMMANDS[name]
            for full in (name, *sorted(sub.name for sub in spec.subcommands.values())):
                mine = full in self.allowed
                if mine != (full in fake):
                    parts.append(("+" if mine else "-") + full)
                    changed = [full] if full != name else [name, *(s.name for s in spec.subcommands.values())]
                    if mine:
                        fake.update(changed)
                    else:
                        fake.difference_update(changed)
                if not mine and self.first_args.get(full):
                    parts.extend(f"+{full}|{arg.decode('utf-8', 'replace')}"
                                 for arg in sorted(self.first_args[full]))
        return " ".join(parts)

    def keys_text(self) -> str:
        return " ".join(k.render() for k in self.key_patterns)

    def channels_text(self) -> str:
        """``&*``, or the patterns, as ACL GETUSER shows them (empty: no channel)."""
        if self.allchannels:
            return "&*"
        return " ".join("&" + p.decode("utf-8", "replace") for p in self.channel_patterns)

    def describe(self) -> str:
        """The ``ACL LIST`` line (also the aclfile line) for this user."""
        parts = [f"user {self.name}", *self.flags()]
        parts.extend(f"#{p}" for p in sorted(self.passwords))
        keys = self.keys_text()
        if keys:
            parts.append(keys)
        if self.allchannels:
            parts.append("&*")
        else:
            parts.append("resetchannels")
            if self.channel_patterns:
                parts.append(self.channels_text())
        parts.append(self.commands_text())
        return " ".join(parts)


def _change(allowed: set[str], first: dict[str, set[bytes]], lowered: str, rule: str) -> None:
    """Apply one command or category rule to a permission state (raise on a bad rule)."""
    add = lowered[0] == "+"
    target = lowered[1:]
    if target.startswith("@"):
        category = target[1:]
        if category not in all_categories():
            raise CommandError(setuser_error(rule, _UNKNOWN))
        names = commands_in(category)
    else:
        parts = target.split("|")
        spec = COMMANDS.get(parts[0])
        if spec is None or not parts[0]:
            raise CommandError(setuser_error(rule, _UNKNOWN))
        if len(parts) > 2 or (len(parts) == 2 and not spec.subcommands and not parts[1]):
            if len(parts) > 2 and spec.subcommands and parts[1] in spec.subcommands:
                raise CommandError(setuser_error(
                    rule, "Allowing first-arg of a subcommand is not supported"))
            raise CommandError(setuser_error(rule, _UNKNOWN))
        if len(parts) == 2 and not spec.subcommands:
            # a first argument of a command without subcommands (+select|0): allow only
            if not add:
                raise CommandError(setuser_error(rule, _UNKNOWN))
            if spec.name not in allowed:
                first.setdefault(spec.name, set()).add(parts[1].encode())
            return
        if len(parts) == 2 and parts[1] not in spec.subcommands:
            raise CommandError(setuser_error(rule, _UNKNOWN))
        names = [target] if len(parts) == 2 else [spec.name, *(s.name for s in spec.subcommands.values())]
    for name in names:
        first.pop(name, None)
    if add:
        allowed.update(names)
    else:
        allowed.difference_update(names)


def default_user(requirepass: str) -> User:
    user = User("default")
    user.apply_rules(["on", "~*", "&*", "+@all"])
    if requirepass:
        user.apply_rules([">" + requirepass])
    else:
        user.apply_rules(["nopass"])
    return user


def key_permissions(spec: CommandSpec, argv: list[bytes]) -> tuple[bool, bool]:
    """The (read, write) permissions a call needs on its keys, from its key spec flags as
    Redis 7 takes them: ``access`` reads the data; ``insert``, ``delete`` and ``update``
    write it; a key only looked at (EXISTS, TYPE, STRLEN: ``RO`` alone) needs neither, so
    any pattern matching it will do."""
    return flag_permissions(call_key_flags(spec, argv))


def flag_permissions(flags: Sequence[str]) -> tuple[bool, bool]:
    """(read, write) as ``key_permissions`` takes them from one key spec's flags."""
    return "access" in flags, any(f in flags for f in ("insert", "delete", "update"))
