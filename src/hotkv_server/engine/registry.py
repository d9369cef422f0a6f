"""The command table: one declarative spec per command, filled by the ``@command`` decorator.

``COMMAND``, ``COMMAND DOCS``, ``ACL CAT``, the generated docs/commands.md, key extraction
for ACLs and cluster routing, and the dispatch lookup all read this one table.

A spec's ``syntax`` is parsed once (``engine/syntax.py``) into the argument tree that
``COMMAND DOCS`` reports.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypedDict, Unpack

from hotkv_server.engine import reference
from hotkv_server.engine.args import parse_int
from hotkv_server.engine.syntax import Arg, parse_syntax, syntax_tokens

Handler = Callable[[Any, list[bytes]], Any]

#: flags as Redis names them in COMMAND output
KNOWN_FLAGS = frozenset(
    ["write", "readonly", "denyoom", "admin", "pubsub", "noscript", "blocking", "loading", "stale",
     "skip_monitor", "skip_slowlog", "fast", "no_auth", "may_replicate", "no_async_loading",
     "no_multi", "allow_busy", "movablekeys", "no_mandatory_keys", "asking"]
)

#: key spec flags as Redis 7 names them, in the order COMMAND INFO lists them
KEY_SPEC_FLAGS = ("RO", "RW", "OW", "RM", "access", "update", "insert", "delete", "not_key",
                  "incomplete", "variable_flags")

#: command tips as Redis 7 writes them (``request_policy:`` / ``response_policy:`` + a value)
TIP_WORDS = frozenset(["nondeterministic_output", "nondeterministic_output_order"])
REQUEST_POLICIES = frozenset(["all_nodes", "all_shards", "multi_shard", "special"])
RESPONSE_POLICIES = frozenset(
    ["one_succeeded", "all_succeeded", "agg_logical_and", "agg_logical_or", "agg_min", "agg_max",
     "agg_sum", "special"]
)

#: last name part of a write command that removes what it names (fallback key spec flags)
_REMOVING = frozenset({"del", "unlink", "delete", "drop", "clear"})

#: Redis 7's 21 ACL categories in the order ACL CAT lists them: every one exists (``+@geo``
#: is a valid rule, ``ACL CAT geo`` answers its commands, none here), then hotkv's own
REDIS_CATEGORIES = (
    "keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
    "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous",
    "connection", "transaction", "scripting",
)
HOTKV_CATEGORIES = ("amem", "amem-read", "amem-write")

#: group -> extra ACL categories every command of the group belongs to
GROUP_CATEGORIES: dict[str, tuple[str, ...]] = {
    "string": ("string",),
    "hash": ("hash",),
    "set": ("set",),
    "list": ("list",),
    "sorted-set": ("sortedset",),
    "generic": ("keyspace",),
    "connection": ("connection",),
    "server": (),
    "transactions": ("transaction",),
    "conv": ("amem",),
    "sem": ("amem",),
    "work": ("amem",),
    "epis": ("amem",),
    "summary": ("amem",),
    "amem": ("amem",),
    "embed": (),  # EMBED.DEDUP.*: not agent memory, so not in @amem
    "replication": (),
    "pubsub": ("pubsub",),
    "cluster": (),
    "scripting": ("scripting",),
}


@dataclass(frozen=True, slots=True)
class KeySpec:
    """One Redis 7 key spec: where a group of keys starts and how far it goes, with the
    access flags of those keys.

    ``index`` is the ``begin_search`` index. A *range* spec (the default) takes the keys
    from there to ``lastkey`` (relative to ``index``; negative counts from the end, -1 the
    last argument) every ``keystep``; a *keynum* spec (``keynum=True``) reads the number
    of keys at ``index + keynumidx`` and takes that many from ``index + firstkey`` on
    (SINTERCARD ``numkeys key ...``, ZUNIONSTORE, EVAL).
    """

    index: int
    flags: tuple[str, ...]
    lastkey: int = 0
    keystep: int = 1
    limit: int = 0
    keynum: bool = False
    keynumidx: int = 0
    firstkey: int = 1
    notes: str | None = None
    #: the syntax's name(s) of the argument(s) holding these keys, space-separated (COMMAND
    #: DOCS types them ``key`` with this spec's index)
    arg: str | None = None
    #: a *keyword* spec: the keys begin after this token, searched from ``index`` (Redis's
    #: ``startfrom``: forwards when positive, backwards from ``argc + index`` when negative)
    keyword: str | None = None
    #: an *unknown* spec (Redis's ``begin_search`` and ``find_keys`` ``unknown``): where the
    #: keys are only the command's ``getkeys`` knows (SORT's STORE, which may stand anywhere)
    unknown: bool = False

    @property
    def begin_search(self) -> str:
        """``index``, ``keyword`` or ``unknown``, as COMMAND INFO types it."""
        if self.unknown:
            return "unknown"
        return "index" if self.keyword is None else "keyword"

    def _start(self, argv: list[bytes]) -> int:
        """Where this spec's keys begin in one call (0: nowhere)."""
        if self.keyword is None:
            return self.index
        argc = len(argv)
        word = self.keyword.encode()
        if self.index > 0:
            candidates = range(self.index, argc - 1)
        else:
            candidates = range(argc + self.index, 0, -1)
        for i in candidates:
            if argv[i].lower() == word.lower():
                return i + 1
        return 0

    def keys(self, argv: list[bytes]) -> list[bytes]:
        """The keys of one call this spec finds (a bad count finds none: the handler
        answers that call with its own error)."""
        found = self.find(argv)
        return [] if found is None else found

    def find(self, argv: list[bytes]) -> list[bytes] | None:
        """``keys``, or None when a keynum spec's count makes the call's keys invalid: not
        a number from 1 up to the keys there are room for, read as C's ``atoi`` reads it
        (Redis's getkeys functions, which decide when the spec fails: ``" 1"``, ``"+1"``,
        ``"1x"`` are 1). Then a command has no keys at all (``CommandSpec.keys_of``)."""
        if self.unknown:
            return []
        argc = len(argv)
        start = self._start(argv)
        if start >= argc or start <= 0:
            return []
        if self.keynum:
            at = start + self.keynumidx
            count = atoi(argv[at]) if at < argc else 0
            first = start + self.firstkey
            if count <= 0 or first + (count - 1) * self.keystep >= argc:
                return None
            return argv[first : first + count * self.keystep : self.keystep]
        last = start + self.lastkey if self.lastkey >= 0 else argc + self.lastkey
        return argv[start : min(last, argc - 1) + 1 : self.keystep]

    def counted_loosely(self, argv: list[bytes]) -> bool:
        """A keynum spec whose count is not a strict integer (``" 1"``, ``"+1"``, ``"01"``):
        Redis's key specs refuse it and its getkeys function (``atoi``) finds the keys,
        the counted ones first (``COMMAND GETKEYS ZUNIONSTORE dst " 1" k``: k, dst)."""
        if not self.keynum:
            return False
        at = self._start(argv) + self.keynumidx
        return 0 < at < len(argv) and parse_int(argv[at]) is None


def atoi(raw: bytes) -> int:
    """C's ``atoi``: leading blanks, a sign, then the digits up to the first other byte
    (none: 0)."""
    text = raw.lstrip(b" \t\n\r\v\f")
    negative = text[:1] == b"-"
    if text[:1] in (b"-", b"+"):
        text = text[1:]
    value = 0
    for byte in text:
        if not 48 <= byte <= 57:
            break
        value = value * 10 + byte - 48
    return -value if negative else value


def key_spec(index: int, flags: str, **options: Any) -> KeySpec:
    """``key_spec(1, "RW access delete")``: a KeySpec with checked flags
    (``key_spec(-2, "RW ...", keyword="KEYS", lastkey=-1)`` a keyword spec,
    ``key_spec(0, "OW update", unknown=True)`` one only the command's ``getkeys`` resolves)."""
    return KeySpec(index, _ordered_key_flags(f"key spec at {index}", flags.split()), **options)


#: a command's own key finder, as Redis's ``getkeys_proc``: each key of one call with the
#: flags of the spec it belongs to (SORT's destination is wherever its last STORE is)
GetKeys = Callable[[list[bytes]], list[tuple[bytes, tuple[str, ...]]]]


@dataclass(slots=True)
class CommandSpec:
    """Everything the server knows about one command (or one subcommand)."""

    name: str  # lower-case full name: "get", "amem.conv.create", "config|get"
    arity: int  # Redis sign rule: n exact, -n at least n (the name counts)
    flags: frozenset[str]
    first_key: int
    last_key: int
    step: int
    categories: frozenset[str]  # without "@"
    group: str
    summary: str
    syntax: str
    since: str
    complexity: str
    handler: Handler | None
    arguments: tuple[Arg, ...] = ()
    #: access flags of the command's keys (Redis 7 key spec flags), empty without keys
    key_flags: tuple[str, ...] = ()
    #: Redis's ``notes`` of the key spec (why its flags are what they are), if any
    key_notes: str | None = None
    #: COMMAND INFO tips (``nondeterministic_output``, ``request_policy:all_shards`` ...)
    tips: tuple[str, ...] = ()
    #: the Redis 7 key specs: one range spec from first/last/step and ``key_flags``, or the
    #: command's own (several groups of keys with their own flags, or a keynum spec)
    key_specs: tuple[KeySpec, ...] = ()
    #: the command's own key finder when its key specs cannot say where every key is
    #: (an ``unknown`` spec); COMMAND GETKEYS, ACL and cluster routing then ask it
    getkeys: GetKeys | None = None
    subcommands: dict[str, CommandSpec] = field(default_factory=dict)
    container: str | None = None  # "config" for "config|get"
    #: the command is part of the HotKV product's dialect (what hotkv-client 1.0.0 sends)
    dialect: bool = False
    #: option tokens of a dialect command that are hotkv extensions beyond the dialect
    extensions: tuple[str, ...] = ()
    #: a subcommand's entry in its container's HELP ("GET <pattern>\n    Return ..."); ""
    #: derives it from the syntax and the summary (a container's: its bare form's entry)
    help: str = ""
    # derived, precomputed for the hot path
    is_write: bool = False
    is_denyoom: bool = False
    is_pubsub: bool = False
    no_auth: bool = False
    allowed_while_loading: bool = False
    allowed_in_multi: bool = True
    allowed_while_busy: bool = False
    stale_ok: bool = False
    skip_monitor: bool = False
    skip_slowlog: bool = False
    # statistics for INFO commandstats
    calls: int = 0
    usec: int = 0
    failed_calls: int = 0
    rejected_calls: int = 0

    @property
    def display_name(self) -> str:
        """How Redis writes the name in errors: ``get``, ``config|get``."""
        return self.name

    def keys_of(self, argv: list[bytes]) -> list[bytes]:
        """The key arguments of one call (by its key specs, as COMMAND GETKEYS does); none
        when a keynum spec's count is invalid (``KeySpec.find``), whatever the other specs
        find: Redis then checks no key (ACL, cluster slots) and the command answers with
        its own error (``ZUNIONSTORE dst 0 k``: "at least 1 input key is needed")."""
        specs = self.key_specs
        if not specs:
            return []
        if self.getkeys is not None:
            return [key for key, _flags in self.getkeys(argv)]
        if len(specs) == 1:
            return specs[0].keys(argv)
        return [key for key, _flags in self.keys_with_flags(argv)]

    def keys_with_flags(self, argv: list[bytes]) -> list[tuple[bytes, tuple[str, ...]]]:
        """Each key of one call with the flags of the key spec that found it (none when
        one spec finds the call's keys invalid, as ``keys_of``). A count read loosely
        (``KeySpec.counted_loosely``) lists the counted keys first and gives every key of
        the call no flags: Redis found them with the command's getkeys function then,
        which names no access, so any key pattern matching a key lets ACL pass it."""
        if self.getkeys is not None:
            return self.getkeys(argv)
        out: list[tuple[bytes, tuple[str, ...]]] = []
        first: list[tuple[bytes, tuple[str, ...]]] = []  # (KeySpec.counted_loosely)
        for ks in self.key_specs:
            found = ks.find(argv)
            if found is None:
                return []
            into = first if ks.counted_loosely(argv) else out
            for key in found:
                into.append((key, ks.flags))
        if first:
            return [(key, ()) for key, _flags in first + out]
        return out


COMMANDS: dict[str, CommandSpec] = {}
#: the dispatch lookup: lower- and upper-case byte names of every top-level command
LOOKUP: dict[bytes, CommandSpec] = {}


class SpecFields(TypedDict, total=False):
    """The declarative fields of a command spec, as ``@command`` takes them.

    ``arity`` and ``group`` are required of every command (from its presets or its own
    fields); its syntax and summary are its handler's docstring (``engine/reference.py``). ``key`` is the common case of one key at argument 1: ``key="RO
    access"`` is ``keys=(1, 1, 1), key_flags="RO access"``.
    """

    arity: int
    flags: str
    keys: tuple[int, int, int]
    key: str
    group: str
    since: str
    complexity: str
    acl: str
    key_flags: str
    key_notes: str
    tips: str
    dialect: bool
    extensions: str
    key_specs: tuple[KeySpec, ...]
    getkeys: GetKeys
    group_categories: bool
    help: str


def command(
    name: str, *presets: SpecFields, **fields: Unpack[SpecFields]
) -> Callable[[Handler], Handler]:
    """Register ``handler`` under ``name`` (``"container|sub"`` for a subcommand).

    The spec is the ``presets`` (fields shared by several commands: a module's
    :func:`family`, ``SpecFields(...)`` of a group of variants), later ones overriding
    earlier ones, then the command's own ``fields``; its syntax and summary are the
    handler's docstring paragraph for ``name`` (``engine/reference.py``), written nowhere
    else.

    ``key_flags`` are the Redis 7 key spec flags of the keys (``"RO access"``, ``"RW update"``,
    ``"OW update"``, ``"RM delete"`` ...); without them they are derived from ``flags`` (see
    ``default_key_flags``). ``tips`` are the COMMAND INFO tips, space-separated.
    ``dialect`` marks a command of the HotKV product's dialect, ``extensions`` the option
    tokens of such a command that only hotkv has (docs/commands.md shows both).
    ``key_specs`` replaces that one derived spec by the command's own (``key_spec(...)``);
    ``keys`` then stays the legacy first/last/step COMMAND INFO reports, and a keynum spec
    adds the ``movablekeys`` flag, as do a keyword or unknown spec and ``getkeys`` (the
    command's own key finder, Redis's ``getkeys_proc``). ``group_categories=False`` leaves
    out the group's ACL categories (SORT is ``generic`` yet not ``@keyspace`` in Redis).
    ``help`` is a subcommand's entry in its container's HELP (``help_lines``), when the one
    derived from syntax and summary will not do.
    """
    spec: dict[str, Any] = {}
    for source in (*presets, fields):
        given: dict[str, Any] = dict(source)
        if "key" in given:
            if "keys" in given or "key_flags" in given:
                raise ValueError(f"{name}: give key= or keys=/key_flags=, not both")
            given["keys"], given["key_flags"] = (1, 1, 1), given.pop("key")
        spec.update(given)
    missing = {"arity", "group"} - spec.keys()
    if missing:
        raise ValueError(f"{name}: no {', '.join(sorted(missing))}")

    def register(handler: Handler) -> Handler:
        found = reference.entry(handler, name)
        if found is None or not found[1]:
            title = name.upper().replace("|", " ")
            raise ValueError(f"{name}: the docstring of {getattr(handler, '__qualname__', handler)} "
                             f"needs a paragraph '{title} <syntax>' followed by the summary")
        add_spec(name, handler=handler, syntax=found[0], summary=found[1], **spec)
        return handler

    return register


def family(**defaults: Unpack[SpecFields]) -> Callable[..., Callable[[Handler], Handler]]:
    """A module's ``command``: ``@command`` with ``defaults`` (its group, ...) preset.

    ``command = family(group="hash")`` at the top of a command module, then
    ``@command("hget", arity=3, ...)`` as anywhere else.
    """

    def family_command(
        name: str, *presets: SpecFields, **fields: Unpack[SpecFields]
    ) -> Callable[[Handler], Handler]:
        return command(name, defaults, *presets, **fields)

    return family_command


def container(
    name: str,
    *,
    group: str,
    summary: str,
    since: str = "0.1.0",
    handler: Handler | None = None,
    arity: int = -2,
    flags: str = "",
    acl: str = "",
    tips: str = "",
    help: str = "",
) -> None:
    """Declare a command that holds subcommands (CONFIG, CLIENT, COMMAND ...).

    ``handler`` (with ``arity=-1``) answers the bare form without a subcommand, as
    ``COMMAND`` alone lists every command. A container takes no categories from its group
    (its subcommands do), only those of ``acl`` and its flags: Redis's CLIENT is ``@slow``
    alone while every CLIENT subcommand is ``@connection``.
    """
    add_spec(
        name,
        handler=handler,
        arity=arity,
        flags=flags,
        keys=(0, 0, 0),
        group=group,
        summary=summary,
        syntax="<subcommand> [arg ...]",
        since=since,
        complexity="Depends on subcommand.",
        acl=acl,
        tips=tips,
        group_categories=False,
        help=help,
    )


def add_spec(
    name: str,
    *,
    handler: Handler | None,
    arity: int,
    flags: str = "",
    keys: tuple[int, int, int] = (0, 0, 0),
    group: str,
    summary: str,
    syntax: str = "",
    since: str = "0.1.0",
    complexity: str = "O(1)",
    acl: str = "",
    key_flags: str = "",
    key_notes: str = "",
    tips: str = "",
    group_categories: bool = True,
    dialect: bool = False,
    extensions: str = "",
    key_specs: tuple[KeySpec, ...] = (),
    getkeys: GetKeys | None = None,
    help: str = "",
) -> CommandSpec:
    name = name.lower()
    if extensions and not dialect:
        raise ValueError(f"{name}: extensions are options of a dialect command")
    for token in extensions.split():
        if token not in syntax_tokens(syntax):
            raise ValueError(f"{name}: extension option {token!r} is not in its syntax")
    flag_words = flags.split()
    movable = getkeys is not None or any(ks.keynum or ks.begin_search != "index" for ks in key_specs)
    if movable and "movablekeys" not in flag_words:
        flag_words.append("movablekeys")
    flag_set = frozenset(flag_words)
    unknown = flag_set - KNOWN_FLAGS
    if unknown:
        raise ValueError(f"{name}: unknown flags {sorted(unknown)}")
    tip_list = tuple(tips.split())
    for tip in tip_list:
        check_tip(name, tip)
    if key_specs:
        if key_flags:
            raise ValueError(f"{name}: give key flags in its key_specs, not key_flags")
        key_flag_list = key_specs[0].flags
    elif keys[0] > 0:
        key_flag_list = _ordered_key_flags(name, key_flags.split()) if key_flags else (
            default_key_flags(name, flag_set, arity, keys)
        )
        lastkey = keys[1] - keys[0] if keys[1] >= 0 else keys[1]
        key_specs = (KeySpec(keys[0], key_flag_list, lastkey=lastkey, keystep=keys[2],
                             notes=key_notes or None),)
    elif key_flags:
        raise ValueError(f"{name}: key_flags given for a command without keys")
    else:
        key_flag_list = ()
    cats = set(acl.replace("@", "").split())
    if group_categories:
        cats.update(GROUP_CATEGORIES.get(group, ()))
    if "write" in flag_set:
        cats.add("write")
    if "readonly" in flag_set and group != "scripting":
        # EVAL_RO is readonly yet not @read in Redis: what it reads is up to the script
        cats.add("read")
    if "admin" in flag_set:
        cats.update(("admin", "dangerous"))
    cats.add("fast" if "fast" in flag_set else "slow")
    if "amem" in cats:
        if "write" in flag_set:
            cats.add("amem-write")
        elif "readonly" in flag_set:
            cats.add("amem-read")
    parent_name, _, sub = name.partition("|")
    spec = CommandSpec(
        name=name,
        arity=arity,
        flags=flag_set,
        first_key=keys[0],
        last_key=keys[1],
        step=keys[2],
        categories=frozenset(cats),
        group=group,
        summary=summary,
        syntax=syntax,
        since=since,
        complexity=complexity,
        handler=handler,
        # a not_key spec's arguments (shard channels) are documented as strings, not keys
        arguments=parse_syntax(syntax, 0 if key_flag_list == ("not_key",) else keys[0],
                               _key_args(key_specs)) if syntax else (),
        key_flags=key_flag_list,
        key_notes=key_notes or None,
        tips=tip_list,
        key_specs=key_specs,
        getkeys=getkeys,
        container=parent_name if sub else None,
        dialect=dialect,
        extensions=tuple(extensions.split()),
        help=help,
        is_write="write" in flag_set,
        is_denyoom="denyoom" in flag_set,
        is_pubsub="pubsub" in flag_set,
        no_auth="no_auth" in flag_set,
        allowed_while_loading="loading" in flag_set,
        allowed_in_multi="no_multi" not in flag_set,
        allowed_while_busy="allow_busy" in flag_set,
        stale_ok="stale" in flag_set,
        skip_monitor="skip_monitor" in flag_set,
        skip_slowlog="skip_slowlog" in flag_set,
    )
    if sub:
        parent = COMMANDS.get(parent_name)
        if parent is None:
            raise ValueError(f"{name}: declare container {parent_name!r} first")
        if sub in parent.subcommands:
            raise ValueError(f"{name}: registered twice")
        parent.subcommands[sub] = spec
    else:
        if name in COMMANDS:
            raise ValueError(f"{name}: registered twice")
        COMMANDS[name] = spec
        LOOKUP[name.encode()] = spec
        LOOKUP[name.upper().encode()] = spec
    return spec


def alias(name: str, *, of: str) -> CommandSpec:
    """Register ``name`` as another name of the top-level command ``of``: the same handler,
    flags, keys and categories (SLAVEOF for REPLICAOF, FLUSHDB for FLUSHALL, PEXPIRE for
    EXPIRE ...), with its own INFO commandstats, and its own syntax and summary when the
    handler's docstring has a paragraph for it (else those of ``of``). A handler shared
    this way tells the names apart by ``argv[0]``."""
    name = name.lower()
    original = COMMANDS.get(of)
    if original is None or original.container is not None or original.subcommands:
        raise ValueError(f"{name}: alias of {of!r}, which is not a registered plain command")
    if name in COMMANDS:
        raise ValueError(f"{name}: registered twice")
    changes: dict[str, Any] = {"name": name, "subcommands": {}}
    found = reference.entry(original.handler, name)
    if found is not None:
        syntax, changes["summary"] = found
        changes["syntax"] = syntax
        first = 0 if original.key_flags == ("not_key",) else original.first_key
        changes["arguments"] = parse_syntax(syntax, first, _key_args(original.key_specs)) if syntax else ()
    spec = dataclasses.replace(original, **changes)
    COMMANDS[name] = spec
    LOOKUP[name.encode()] = spec
    LOOKUP[name.upper().encode()] = spec
    return spec


def help_lines(container: str, order: tuple[str, ...] = ()) -> list[str]:
    """The reply of ``<CONTAINER> HELP``, built from the table: a header, the bare form's
    entry (the container's ``help``), one entry per subcommand (those in ``order`` first,
    the others as registered), HELP last. A new subcommand shows up without more code."""
    spec = COMMANDS[container]
    lines = [f"{container.upper()} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"]
    if spec.help:
        lines += spec.help.split("\n")
    subs = spec.subcommands
    names = [n for n in order if n in subs] + [n for n in subs if n not in order and n != "help"]
    if "help" in subs:
        names.append("help")
    for name in names:
        sub = subs[name]
        if sub.help:
            lines += sub.help.split("\n")
        elif name == "help":
            lines += ["HELP", "    Print this help."]
        else:
            lines += [f"{name.upper()} {sub.syntax}".rstrip(), f"    {sub.summary}"]
    return lines


def _key_args(key_specs: tuple[KeySpec, ...]) -> dict[str, int] | None:
    """Argument name -> key spec index, for a command whose key specs name their arguments."""
    named = {name: i for i, ks in enumerate(key_specs) if ks.arg is not None for name in ks.arg.split()}
    return named or None


def check_tip(name: str, tip: str) -> None:
    """Refuse a tip Redis 7 would not know (a typo would silently mislead cluster clients)."""
    kind, sep, value = tip.partition(":")
    if not sep and tip in TIP_WORDS:
        return
    if (kind == "request_policy" and value in REQUEST_POLICIES) or (
        kind == "response_policy" and value in RESPONSE_POLICIES
    ):
        return
    raise ValueError(f"{name}: unknown command tip {tip!r}")


def _ordered_key_flags(name: str, flags: list[str]) -> tuple[str, ...]:
    unknown = set(flags) - set(KEY_SPEC_FLAGS)
    if unknown:
        raise ValueError(f"{name}: unknown key spec flags {sorted(unknown)}")
    # exactly one of the four access kinds, as Redis requires of every key spec (but for
    # a ``not_key`` spec: a shard channel, routed as a key, is no data at all)
    if flags == ["not_key"]:
        return ("not_key",)
    if len(set(flags) & {"RO", "RW", "OW", "RM"}) != 1:
        raise ValueError(f"{name}: key spec flags need exactly one of RO, RW, OW, RM")
    return tuple(f for f in KEY_SPEC_FLAGS if f in flags)


def default_key_flags(
    name: str, flags: frozenset[str], arity: int, keys: tuple[int, int, int]
) -> tuple[str, ...]:
    """Key spec flags for a command that declares none.

    A write whose name ends in DEL/UNLINK/DELETE/DROP/CLEAR removes: the key itself
    (``RM delete``) when every argument is a key or it takes just the key, else entries
    inside the key (``RW delete``, as HDEL). Another write updates (``RW update``), a read
    reads (``RO access``), and anything else only looks at the key (``RO``).
    """
    if "write" in flags:
        last_word = name.replace("|", ".").rsplit(".", 1)[-1]
        if last_word in _REMOVING:
            whole_key = keys[1] == -1 or arity == 2
            return ("RM", "delete") if whole_key else ("RW", "delete")
        return ("RW", "update")
    if "readonly" in flags:
        return ("RO", "access")
    return ("RO",)


def lookup(name: bytes) -> CommandSpec | None:
    spec = LOOKUP.get(name)
    if spec is None:
        spec = LOOKUP.get(name.lower())
    return spec


def all_specs() -> list[CommandSpec]:
    """Every top-level command, sorted by name."""
    return [COMMANDS[n] for n in sorted(COMMANDS)]


def find(fullname: str) -> CommandSpec | None:
    """``"get"`` or ``"config|get"`` -> its spec."""
    parent, _, sub = fullname.lower().partition("|")
    spec = COMMANDS.get(parent)
    if spec is None or not sub:
        return spec
    return spec.subcommands.get(sub)
