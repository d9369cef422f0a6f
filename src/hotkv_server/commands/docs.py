"""The Markdown command reference (docs/commands.md), generated from the one command table.

Regenerate after adding or changing a command::

    python -m hotkv_server.commands.docs > docs/commands.md

A test fails when the committed file differs from ``render_reference()``.
"""

from __future__ import annotations

import sys

from hotkv_server.commands import load_all
from hotkv_server.commands.introspection import command_categories, command_flags, key_spec_flags
from hotkv_server.engine.registry import CommandSpec, KeySpec, all_specs

#: group -> heading, in the order the reference lists them (unknown groups follow, sorted)
GROUP_TITLES: dict[str, str] = {
    "conv": "Conversation memory (AMEM.CONV.*)",
    "sem": "Semantic memory (AMEM.SEM.*)",
    "work": "Working memory (AMEM.WORK.*)",
    "epis": "Episodic memory (AMEM.EPIS.*)",
    "summary": "Rolling summary (AMEM.SUMMARY.*)",
    "amem": "Across the memory stores",
    "embed": "Embedding cache (EMBED.DEDUP.*)",
    "string": "String cache",
    "generic": "Keys of the string cache",
    "connection": "Connection",
    "transactions": "Transactions",
    "server": "Server",
    "replication": "Replication",
    "vector_set": "Vector sets (Redis 8) and VSIM.* indexes",
}

REGENERATE = "python -m hotkv_server.commands.docs > docs/commands.md"

#: groups of the memory commands, which carry an "origin" line (dialect or extension)
MEMORY_GROUPS = frozenset({"conv", "sem", "work", "epis", "summary", "amem"})

#: what the "origin" line of a memory command means
ORIGIN_TEXT = (
    "\"Origin\" says where a memory command comes from. `HotKV dialect` commands are those",
    "the HotKV product's official packages send (hotkv-client 1.0.0's AIMemoryCommands, the",
    "hotkv-mcp 1.0.0 server): their plain form answers exactly as the dialect does (`+OK` for",
    "a write, `1`/`0` for a delete or clear, flat lists of ids ...). The options listed after",
    "`hotkv extensions` are hotkv's own, beyond the dialect (WITHSEQ, WITHID, WITHCREATED,",
    "RECORD ask for hotkv's richer replies: a turn's sequence number, an event id,",
    "created-vs-replaced, the summary record with `upto`). A `hotkv extension` command is",
    "hotkv's alone. The commands outside the memory groups are Redis's and answer as Redis 7.",
    "docs/dialect.md maps every official client method and MCP tool to its command.",
)

#: what the "key access" and "tips" lines mean (Redis 7's key spec flags and command tips)
KEY_ACCESS_TEXT = (
    "\"Key access\" lists the key spec flags `COMMAND INFO` and `COMMAND GETKEYSANDFLAGS` report",
    "for the command's keys, as Redis 7 names them: `RO` reads the key, `RW` reads and changes",
    "it, `OW` overwrites it without reading, `RM` removes it; `access` returns data from it,",
    "`update` changes data in it, `insert` only adds data, `delete` removes data from it;",
    "`variable_flags` means the flags of one call depend on its arguments (SET with GET,",
    "AMEM.WORK.SET with MERGE) and GETKEYSANDFLAGS reports those of the call. The Redis",
    "commands carry Redis's own flags. For the memory commands: removing the whole object",
    "(AMEM.CONV.DEL/DROP, AMEM.WORK.CLEAR, AMEM.EPIS.DEL, AMEM.SUMMARY.DEL/DROP, AMEM.SEM.DROP)",
    "is `RM delete`; removing entries inside it and keeping the object (AMEM.WORK.DEL,",
    "AMEM.SEM.DEL/FORGET, AMEM.EPIS.TRIM/CLEAR, AMEM.CONV.CLEAR) is `RW delete`, as HDEL and",
    "XTRIM are; AMEM.EPIS.LOG only adds to an append-only log (`RW insert`);",
    "every other write is `RW update`, since none replaces an object without reading it (a",
    "summary's version, a window's sequence numbers carry on), so none is `OW`; reads are",
    "`RO access`, counts (LEN) are `RO` as LLEN and STRLEN are.",
    "",
    "\"Tips\" are Redis 7's command tips: `nondeterministic_output` for a reply that depends on",
    "the clock (TTLs counting down, AMEM.CONV.INFO's `ttl`, AMEM.EPIS.LOG's time-based ids),",
    "`request_policy` / `response_policy` for how a cluster client spreads a command over",
    "shards and merges the replies (multi-key deletes like AMEM.CONV.DEL sum their counts).",
)


def display_name(spec: CommandSpec) -> str:
    """``config|get`` -> ``CONFIG GET``; ``amem.conv.append`` -> ``AMEM.CONV.APPEND``."""
    return spec.name.replace("|", " ").upper()


def syntax_line(spec: CommandSpec) -> str:
    name = display_name(spec)
    if spec.subcommands:
        return f"{name} <subcommand> [arg ...]" if spec.handler is None else f"{name} [<subcommand> [arg ...]]"
    return f"{name} {spec.syntax}".rstrip()


def arity_text(arity: int) -> str:
    if arity >= 0:
        n = arity - 1
        return f"{arity} (exactly {n} argument{'' if n == 1 else 's'})"
    n = -arity - 1
    if n == 0:
        return f"{arity} (any number of arguments)"
    return f"{arity} (at least {n} argument{'' if n == 1 else 's'})"


def keys_text(spec: CommandSpec) -> str:
    if not spec.key_specs:
        return "none"
    if len(spec.key_specs) > 1 or spec.key_specs[0].keynum:
        return "; ".join(
            f"{_key_spec_text(ks)} ({' '.join(ks.flags)})" for ks in spec.key_specs
        ) + f" (legacy first {spec.first_key}, last {spec.last_key}, step {spec.step})"
    if spec.first_key == spec.last_key:
        return f"argument {spec.first_key} (first {spec.first_key}, last {spec.last_key}, step {spec.step})"
    last = "the last argument" if spec.last_key == -1 else f"argument {spec.last_key}"
    if spec.last_key < -1:
        last = f"argument {spec.last_key} from the end"
    every = "" if spec.step == 1 else f", every {spec.step}"
    return (
        f"arguments {spec.first_key} to {last}{every} "
        f"(first {spec.first_key}, last {spec.last_key}, step {spec.step})"
    )


def origin_text(spec: CommandSpec) -> str:
    """``HotKV dialect; hotkv extensions: `PX`, `UPDATE``` for a memory command, else ''."""
    if spec.group not in MEMORY_GROUPS:
        return ""
    if not spec.dialect:
        return "hotkv extension"
    if not spec.extensions:
        return "HotKV dialect"
    return "HotKV dialect; hotkv extensions: " + ", ".join(f"`{t}`" for t in spec.extensions)


def _key_spec_text(ks: KeySpec) -> str:
    if ks.unknown:  # only the command knows where (SORT's patterns and STORE)
        return f"the {ks.arg} keys the command finds" if ks.arg else "keys the command finds"
    if ks.keyword is not None:
        where = f"after {ks.keyword}"
        return f"{where} to the last argument" if ks.lastkey == -1 else where
    if ks.keynum:
        return (f"as many as argument {ks.index + ks.keynumidx} says, "
                f"from argument {ks.index + ks.firstkey}")
    if ks.lastkey == 0:
        return f"argument {ks.index}"
    last = "the last argument" if ks.lastkey == -1 else (
        f"argument {ks.index + ks.lastkey}" if ks.lastkey > 0 else f"argument {ks.lastkey} from the end")
    every = "" if ks.keystep == 1 else f", every {ks.keystep}"
    return f"arguments {ks.index} to {last}{every}"


def render_command(spec: CommandSpec) -> list[str]:
    flags = ", ".join(command_flags(spec)) or "none"
    lines = [
        f"### {display_name(spec)}",
        "",
        "```",
        syntax_line(spec),
        "```",
        "",
        spec.summary,
        "",
        f"- arity: {arity_text(spec.arity)}",
        f"- flags: {flags}",
        f"- ACL categories: {' '.join(command_categories(spec))}",
        f"- keys: {keys_text(spec)}",
    ]
    if len(spec.key_specs) == 1 and not spec.key_specs[0].keynum:
        note = f" ({spec.key_notes})" if spec.key_notes else ""
        lines.append(f"- key access: {' '.join(key_spec_flags(spec))}{note}")
    if spec.tips:
        lines.append(f"- tips: {' '.join(spec.tips)}")
    origin = origin_text(spec)
    if origin:
        lines.append(f"- origin: {origin}")
    lines += [
        f"- complexity: {spec.complexity}",
        f"- since: {spec.since}",
    ]
    if spec.subcommands:
        subs = ", ".join(display_name(spec.subcommands[n]) for n in sorted(spec.subcommands))
        lines.append(f"- subcommands: {subs}")
    lines.append("")
    return lines


def _anchor(title: str) -> str:
    """GitHub's heading anchor: lower case, spaces to dashes, punctuation dropped."""
    kept = "".join(c for c in title.lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def render_reference() -> str:
    """The whole reference as Markdown (deterministic: groups in a fixed order, names sorted)."""
    load_all()
    by_group: dict[str, list[CommandSpec]] = {}
    for spec in all_specs():
        by_group.setdefault(spec.group, []).append(spec)
    groups = [g for g in GROUP_TITLES if g in by_group]
    groups += sorted(g for g in by_group if g not in GROUP_TITLES)
    total = sum(1 + len(spec.subcommands) for spec in all_specs())

    out = [
        "# hotkv command reference",
        "",
        "Generated from the command table (`src/hotkv_server/engine/registry.py`); do not edit by hand.",
        f"Regenerate with `{REGENERATE}`.",
        "",
        "Arity follows Redis's sign rule (the command name counts; negative means \"at least\").",
        "Flags and ACL categories are those `COMMAND INFO` reports; keys are the positions",
        "`COMMAND GETKEYS`, ACL key patterns and cluster routing use. The argument notation is",
        "that of the contract: `[x]` optional, `a|b` one of, `...` repeatable, upper-case words",
        "are literal tokens.",
        "",
        *KEY_ACCESS_TEXT,
        "",
        *ORIGIN_TEXT,
        "",
        f"{len(all_specs())} commands ({total} counting subcommands).",
        "",
    ]
    for group in groups:
        title = GROUP_TITLES.get(group, group)
        names = ", ".join(display_name(s) for s in by_group[group])
        out.append(f"- [{title}](#{_anchor(title)}): {names}")
    out.append("")
    for group in groups:
        out.append(f"## {GROUP_TITLES.get(group, group)}")
        out.append("")
        for spec in by_group[group]:
            if spec.handler is not None or not spec.subcommands:
                out.extend(render_command(spec))
            else:
                out.extend(render_container(spec))
            for sub in sorted(spec.subcommands):
                out.extend(render_command(spec.subcommands[sub]))
    return "\n".join(out).rstrip("\n") + "\n"


def render_container(spec: CommandSpec) -> list[str]:
    subs = ", ".join(display_name(spec.subcommands[n]) for n in sorted(spec.subcommands))
    return [f"### {display_name(spec)}", "", spec.summary, "", f"- subcommands: {subs}", ""]


def main() -> int:
    sys.stdout.write(render_reference())
    return 0


if __name__ == "__main__":
    sys.exit(main())
