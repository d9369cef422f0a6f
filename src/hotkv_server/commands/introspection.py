"""COMMAND and its subcommands: the command table as redis-cli and redis-py read it.

Every reply here is generated from the one table in ``registry.py`` and has the exact
shape Redis 7 sends, because clients index into it by position:

* ``COMMAND INFO`` entry: ``[name, arity, flags, first_key, last_key, step, acl_categories,
  tips, key_specs, subcommands]``. Flags, categories, tips and key specs are RESP3 *sets*
  (arrays in RESP2), subcommands an array of entries (an empty set when there are none).
* key specs are the spec's ``key_specs``: by default one derived from first/last/step
  (``begin_search`` ``index`` at the first key, ``find_keys`` ``range`` with ``lastkey``
  relative to it, negative = from the end, flags and Redis's ``notes`` from ``key_flags``),
  else the command's own (several groups of keys, or a ``keynum`` spec). A command whose key flags
  depend on its arguments (``variable_flags``: SET with or without GET) has them worked
  out per call for GETKEYSANDFLAGS, as Redis does.
* tips are the spec's ``tips`` in declaration order, as Redis lists them.
* ``COMMAND DOCS``: a map name -> ``{summary, since, group, complexity, arguments}``
  (flat arrays in RESP2), containers with a ``subcommands`` map instead of arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hotkv_server.commands.glob import glob_match
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import SYNTAX, CommandError
from hotkv_server.engine.registry import (
    COMMANDS,
    CommandSpec,
    SpecFields,
    all_specs,
    container,
    family,
    find,
    help_lines,
)
from hotkv_server.engine.replies import OrderedSet, Simple

command = family(group="server")

#: Redis's order of command flags in COMMAND output
FLAG_ORDER = (
    "write", "readonly", "denyoom", "module", "admin", "pubsub", "noscript", "blocking",
    "loading", "stale", "skip_monitor", "skip_slowlog", "asking", "fast", "no_auth",
    "may_replicate", "no_mandatory_keys", "no_async_loading", "no_multi", "movablekeys",
    "allow_busy",
)

#: Redis's order of ACL categories; hotkv's own categories follow
CATEGORY_ORDER = (
    "keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
    "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking",
    "dangerous", "connection", "transaction", "scripting", "amem", "amem-read", "amem-write",
)


# --- building blocks ------------------------------------------------------------------


def resp_set(items: list[Any], proto: int) -> Any:
    """A RESP3 set (``~``) in the given order; a plain array in RESP2 (COMMAND output
    should be stable, and a Python set is encoded in hash order)."""
    return OrderedSet(items) if proto == 3 else items


def _ordered(names: frozenset[str], order: tuple[str, ...]) -> list[str]:
    rank = {name: i for i, name in enumerate(order)}
    return sorted(names, key=lambda n: (rank.get(n, len(order)), n))


def command_flags(spec: CommandSpec) -> list[str]:
    return _ordered(spec.flags, FLAG_ORDER)


def command_categories(spec: CommandSpec) -> list[str]:
    return ["@" + c for c in _ordered(spec.categories, CATEGORY_ORDER)]


def key_spec_flags(spec: CommandSpec) -> list[str]:
    """The access flags of the command's keys, as Redis 7 key specs name them."""
    return list(spec.key_flags)


def _set_call_key_flags(call: list[bytes]) -> list[str]:
    # Redis (setGetKeys) looks for a GET anywhere after the value, even as another option's value
    if any(arg.upper() == b"GET" for arg in call[3:]):
        return ["RW", "access", "update"]
    return ["OW", "update"]


def _work_set_call_key_flags(call: list[bytes]) -> list[str]:
    # a MERGE other than REPLACE answers the merged value, so it reads the key's data too
    options = [arg.upper() for arg in call[4:]]
    for i, option in enumerate(options[:-1]):
        if option == b"MERGE" and options[i + 1] != b"REPLACE":
            return ["RW", "access", "update"]
    return ["RW", "update"]


#: commands whose key flags depend on the call (their key spec has ``variable_flags``)
_CALL_KEY_FLAGS = {"set": _set_call_key_flags, "amem.work.set": _work_set_call_key_flags}


def call_key_flags(spec: CommandSpec, call: list[bytes]) -> Sequence[str]:
    """The key flags of one call, as GETKEYSANDFLAGS reports them (ACL checks them for
    every keyed call of a restricted user: the spec's own tuple, not a copy). No flags for
    a numkeys count read loosely (``" 1"``, ``"+1"``: Redis's getkeys function found the
    keys, and it names no access)."""
    first = spec.key_specs[0]
    if first.keynum and first.counted_loosely(call):
        return ()
    resolve = _CALL_KEY_FLAGS.get(spec.name)
    if resolve is not None:
        return resolve(call)
    return spec.key_flags


def key_specs(spec: CommandSpec) -> list[dict[str, Any]]:
    """The command's key specs (``CommandSpec.key_specs``) as COMMAND INFO writes them."""
    out: list[dict[str, Any]] = []
    for ks in spec.key_specs:
        keyspec: dict[str, Any] = {}
        if ks.notes:
            keyspec["notes"] = ks.notes  # Redis sends it first
        begin: dict[str, Any]
        if ks.unknown:  # only the command's own key finder knows (SORT's STORE)
            begin = {"type": "unknown", "spec": {}}
        elif ks.keyword is not None:
            begin = {"type": "keyword", "spec": {"keyword": ks.keyword, "startfrom": ks.index}}
        else:
            begin = {"type": "index", "spec": {"index": ks.index}}
        if ks.unknown:
            find_keys: dict[str, Any] = {"type": "unknown", "spec": {}}
        elif ks.keynum:
            find_keys = {"type": "keynum",
                         "spec": {"keynumidx": ks.keynumidx, "firstkey": ks.firstkey,
                                  "keystep": ks.keystep}}
        else:
            find_keys = {"type": "range",
                         "spec": {"lastkey": ks.lastkey, "keystep": ks.keystep, "limit": ks.limit}}
        keyspec.update({"flags": list(ks.flags), "begin_search": begin, "find_keys": find_keys})
        out.append(keyspec)
    return out


def _subspecs(spec: CommandSpec) -> list[CommandSpec]:
    return [spec.subcommands[name] for name in sorted(spec.subcommands)]


def command_info(spec: CommandSpec, proto: int) -> list[Any]:
    """The 10-element COMMAND INFO entry of one command (recursing into subcommands)."""
    specs_out = []
    for ks in key_specs(spec):
        flags = resp_set([Simple(f) for f in ks["flags"]], proto)
        specs_out.append({**ks, "flags": flags})
    subs = _subspecs(spec)
    return [
        spec.name,
        spec.arity,
        resp_set([Simple(f) for f in command_flags(spec)], proto),
        spec.first_key,
        spec.last_key,
        spec.step,
        resp_set([Simple(c) for c in command_categories(spec)], proto),
        resp_set(list(spec.tips), proto),  # bulk strings, as Redis sends tips
        resp_set(specs_out, proto),
        [command_info(sub, proto) for sub in subs] if subs else resp_set([], proto),
    ]


def _docs_args(node: dict[str, Any], proto: int) -> dict[str, Any]:
    out = dict(node)
    if "flags" in out:
        out["flags"] = resp_set(list(out["flags"]), proto)
    if "arguments" in out:
        out["arguments"] = [_docs_args(child, proto) for child in out["arguments"]]
    return out


def command_docs(spec: CommandSpec, proto: int) -> dict[str, Any]:
    """The COMMAND DOCS map of one command."""
    doc: dict[str, Any] = {
        "summary": spec.summary,
        "since": spec.since,
        "group": spec.group,
        "complexity": spec.complexity,
    }
    if spec.subcommands:
        doc["subcommands"] = {sub.name: command_docs(sub, proto) for sub in _subspecs(spec)}
    elif spec.arguments:
        doc["arguments"] = [_docs_args(arg.to_docs(), proto) for arg in spec.arguments]
    return doc


def every_name() -> list[str]:
    """Every command and subcommand name (``config|get``), sorted."""
    names: list[str] = []
    for spec in all_specs():
        names.append(spec.name)
        names.extend(sub.name for sub in _subspecs(spec))
    return names


def _name(raw: bytes) -> str:
    return raw.decode("utf-8", "replace").lower()


def resolve_call(argv: list[bytes]) -> CommandSpec | None:
    """The spec a full command line would run (``CONFIG GET x`` -> config|get)."""
    spec = COMMANDS.get(_name(argv[0]))
    if spec is None:
        return None
    if spec.subcommands and len(argv) >= 2:
        return spec.subcommands.get(_name(argv[1]))
    return spec


# --- COMMAND ---------------------------------------------------------------------------


def command_all(ctx: Context, argv: list[bytes]) -> Any:
    """COMMAND"""
    return [command_info(spec, ctx.proto) for spec in all_specs()]


container(
    "command",
    group="server",
    summary="Returns detailed information about all commands.",
    handler=command_all,
    arity=-1,
    flags="loading stale",
    acl="connection",
    tips="nondeterministic_output_order",
    help="(no subcommand)\n    Return details about all hotkv commands.",
)


@command("command|count", arity=2, flags="loading stale", acl="connection",
         help="COUNT\n    Return the total number of commands in this hotkv server.")
def command_count(ctx: Context, argv: list[bytes]) -> Any:
    """COMMAND COUNT
    Returns a count of commands.
    """
    return len(COMMANDS)


@command("command|list", arity=-2, flags="loading stale", acl="connection",
         tips="nondeterministic_output_order",
         complexity="O(N) where N is the total number of commands",
         help="LIST [FILTERBY (MODULE <module-name>|ACLCAT <category>|PATTERN <pattern>)]\n    Return a list of all commands in this hotkv server.")
def command_list(ctx: Context, argv: list[bytes]) -> Any:
    """COMMAND LIST [FILTERBY (MODULE module-name|ACLCAT category|PATTERN pattern)]
    Returns a list of command names.
    """
    names = every_name()
    if len(argv) == 2:
        return names
    if len(argv) != 5 or argv[2].upper() != b"FILTERBY":
        raise CommandError(SYNTAX)
    kind = argv[3].upper()
    value = argv[4]
    if kind == b"MODULE":
        return []  # no modules: nothing was loaded from one
    if kind == b"ACLCAT":
        category = _name(value).removeprefix("@")
        return [n for n in names if category in _spec(n).categories]
    if kind == b"PATTERN":
        pattern = value.lower()
        return [n for n in names if glob_match(pattern, n.encode())]
    raise CommandError(SYNTAX)


def _spec(fullname: str) -> CommandSpec:
    spec = find(fullname)
    assert spec is not None
    return spec


#: what COMMAND INFO and COMMAND DOCS share
_BY_NAME = SpecFields(arity=-2, flags="loading stale", acl="connection",
                      tips="nondeterministic_output_order", complexity="O(N) where N is the number of commands to look up")


@command("command|info", _BY_NAME,
         help="INFO [<command-name> ...]\n    Return details about multiple hotkv commands.\n    If no command names are given, details for all commands are returned.")
def command_info_cmd(ctx: Context, argv: list[bytes]) -> Any:
    """COMMAND INFO [command-name ...]
    Returns information about one, multiple or all commands.
    """
    if len(argv) == 2:
        return [command_info(spec, ctx.proto) for spec in all_specs()]
    out: list[Any] = []
    for raw in argv[2:]:
        spec = find(_name(raw))
        out.append(None if spec is None else command_info(spec, ctx.proto))
    return out


@command("command|docs", _BY_NAME,
         help="DOCS [<command-name> ...]\n    Return documentation details about multiple hotkv commands.\n    If no command names are given, documentation details for all\n    commands are returned.")
def command_docs_cmd(ctx: Context, argv: list[bytes]) -> Any:
    """COMMAND DOCS [command-name ...]
    Returns documentary information about one, multiple or all commands.
    """
    if len(argv) == 2:
        return {spec.name: command_docs(spec, ctx.proto) for spec in all_specs()}
    out: dict[str, Any] = {}
    for raw in argv[2:]:
        spec = find(_name(raw))
        if spec is not None:  # unknown names are left out, as Redis does
            out[spec.name] = command_docs(spec, ctx.proto)
    return out


def _keys_of_call(call: list[bytes]) -> tuple[CommandSpec, list[bytes]]:
    spec = resolve_call(call)
    if spec is None:
        raise CommandError("ERR Invalid command specified")
    # Redis checks for keys before the argument count (getKeysSubcommandImpl)
    if not spec.key_specs or spec.key_flags == ("not_key",):  # shard channels are no keys
        raise CommandError("ERR The command has no key arguments")
    n = len(call)
    if (spec.arity > 0 and n != spec.arity) or n < -spec.arity:
        raise CommandError("ERR Invalid number of arguments specified for command")
    keys = spec.keys_of(call)
    if not keys:
        # Redis's getkeys functions of numkeys commands find no keys for a count that is not
        # a number >= 1 or names more keys than there are arguments (KeySpec.find): this
        # error, or no keys for a command whose keys are optional (EVAL's numkeys 0)
        if "no_mandatory_keys" in spec.flags:
            return spec, []
        raise CommandError("ERR Invalid arguments specified for command")
    return spec, keys


#: what COMMAND GETKEYS and GETKEYSANDFLAGS share
_GETKEYS = SpecFields(arity=-4, flags="loading stale", acl="connection",
                      complexity="O(N) where N is the number of arguments to the command")


@command("command|getkeys", _GETKEYS,
         help="GETKEYS <full-command>\n    Return the keys from a full hotkv command.")
def command_getkeys(ctx: Context, argv: list[bytes]) -> Any:
    """COMMAND GETKEYS command arg [arg ...]
    Extracts the key names from an arbitrary command.
    """
    return _keys_of_call(argv[2:])[1]


@command("command|getkeysandflags", _GETKEYS,
         help="GETKEYSANDFLAGS <full-command>\n    Return the keys and the access flags from a full hotkv command.")
def command_getkeysandflags(ctx: Context, argv: list[bytes]) -> Any:
    """COMMAND GETKEYSANDFLAGS command arg [arg ...]
    Extracts the key names and access flags for an arbitrary command.
    """
    call = argv[2:]
    spec, _keys = _keys_of_call(call)
    if len(spec.key_specs) == 1:  # the flags may depend on the call (SET ... GET)
        flags = [Simple(f) for f in call_key_flags(spec, call)]
        return [[key, resp_set(list(flags), ctx.proto)] for key in _keys]
    return [[key, resp_set([Simple(f) for f in flags_of], ctx.proto)]
            for key, flags_of in spec.keys_with_flags(call)]


@command("command|help", arity=2, flags="loading stale", acl="connection")
def command_help(ctx: Context, argv: list[bytes]) -> Any:
    """COMMAND HELP
    Returns helpful text about the different subcommands.
    """
    return [Simple(line) for line in help_lines("command")]

