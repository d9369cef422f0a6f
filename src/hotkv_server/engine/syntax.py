"""A command's syntax line -> the argument tree that ``COMMAND DOCS`` reports.

The syntax is written in the notation of commands.md (``[x]`` optional, ``a|b`` one of,
``(...)`` a group, ``...`` repeatable, UPPER-case words are literal tokens); an argument's
type (integer, double, key, pattern, unix-time ...) follows from its name.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Arg:
    """One node of a command's argument tree, as COMMAND DOCS reports it."""

    name: str
    type: str  # string integer double key pattern unix-time pure-token oneof block
    token: str | None = None
    optional: bool = False
    multiple: bool = False
    children: tuple[Arg, ...] = ()
    key_spec_index: int | None = None

    def to_docs(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"name": self.name, "type": self.type}
        if self.key_spec_index is not None:
            doc["key_spec_index"] = self.key_spec_index
        if self.token is not None:
            doc["token"] = self.token
        flags = [f for f, on in (("optional", self.optional), ("multiple", self.multiple)) if on]
        if flags:
            doc["flags"] = [_simple(f) for f in flags]
        if self.children:
            doc["arguments"] = [child.to_docs() for child in self.children]
        return doc


def _simple(text: str) -> Any:
    from hotkv_server.engine.replies import Simple

    return Simple(text)


_TOKEN_RE = re.compile(r"\[|\]|\(|\)|\||\.\.\.|[^\s\[\]()|]+")
_INTEGER_NAMES = {"n", "count", "k", "dim", "m", "s", "ms", "seconds", "milliseconds", "numreplicas",
                  "timeout", "cursor", "increment", "decrement", "port", "index",
                  "db", "v", "version", "id-or-count", "timestamp", "bits", "offset", "protover"}
#: tokens whose value is text whatever its short name (``SOURCE s`` is not ``TTL s``)
_TEXT_TOKENS = {"SOURCE", "DESCRIPTION", "KIND", "PREFIX", "META", "TEXT", "DEFAULT"}
_DOUBLE_NAMES = {"c", "x", "a", "confidence", "v1", "vdim", "alpha"}


def syntax_tokens(syntax: str) -> list[str]:
    """The words and brackets of a syntax line, in order."""
    return _TOKEN_RE.findall(syntax)


def parse_syntax(syntax: str, first_key: int, key_args: dict[str, int] | None = None) -> tuple[Arg, ...]:
    """Turn ``"session role content [META json-object]"`` into Arg nodes.

    The first plain argument is typed ``key`` when the command has keys at position 1;
    with ``key_args`` (name -> key spec index) exactly the arguments named there are.
    """
    tokens = _TOKEN_RE.findall(syntax)
    pos = 0
    key_done = first_key <= 0 or key_args is not None

    def parse_seq(end: str | None) -> list[Arg]:
        nonlocal pos
        items: list[list[Arg]] = [[]]
        while pos < len(tokens):
            tok = tokens[pos]
            if tok == end:
                pos += 1
                break
            pos += 1
            if tok == "|":
                items.append([])
                continue
            if tok == "...":
                if items[-1]:
                    last = items[-1][-1]
                    stem = last.name[:-1]
                    after = tokens[pos] if pos < len(tokens) else ""
                    if last.name.endswith("1") and stem and after.startswith(stem) and after != last.name:
                        # ``v1 ... vdim``: one argument given several times (``v [v ...]``),
                        # not a ``v1`` repeated and then a ``vdim``
                        pos += 1
                        last = _replace(last, name=stem)
                    items[-1][-1] = _replace(last, multiple=True)
                continue
            if tok in ("[", "("):
                inner = parse_seq("]" if tok == "[" else ")")
                node = _group(inner, optional=tok == "[")
                items[-1].append(node)
                continue
            items[-1].append(leaf(tok))
        if len(items) == 1:
            return items[0]
        led = _token_led_choice(items)
        if led is not None:
            return [led]
        alternatives = [seq[0] if len(seq) == 1 else _block(seq) for seq in items]
        return [Arg(name=_alt_name(alternatives), type="oneof", children=tuple(alternatives))]

    def leaf(tok: str) -> Arg:
        nonlocal key_done
        if tok.isupper() or (tok[0].isupper() and tok.replace("_", "").replace("-", "").isalnum()
                             and tok.upper() == tok):
            return Arg(name=tok.lower(), type="pure-token", token=tok)
        if key_args is not None and tok in key_args:
            # a pattern that forms key names (SORT's BY and GET) keeps its type, as Redis's
            kind = "pattern" if tok in ("pattern", "glob") else "key"
            return Arg(name=tok, type=kind, key_spec_index=key_args[tok])
        if not key_done:
            key_done = True
            return Arg(name=tok, type="key", key_spec_index=0)
        if tok.startswith("unix-time"):
            return Arg(name=tok, type="unix-time")
        if tok in _INTEGER_NAMES:
            return Arg(name=tok, type="integer")
        if tok in _DOUBLE_NAMES:
            return Arg(name=tok, type="double")
        if tok in ("pattern", "glob"):
            return Arg(name=tok, type="pattern")
        return Arg(name=tok, type="string")

    result = parse_seq(None)
    return tuple(_fold_tokens(result))


def _fold_tokens(args: list[Arg]) -> list[Arg]:
    """Give a literal token to the argument it introduces, as Redis docs do.

    ``TTL s`` becomes one argument ``s`` with token ``TTL``; ``TYPE (CONV|SEM)`` becomes one
    ``oneof`` named ``type`` with token ``TYPE`` (as Redis writes SCAN's and CLIENT LIST's
    TYPE); a block left with a single argument is that argument.
    """
    args = _fold_repeats(args)
    out: list[Arg] = []
    i = 0
    while i < len(args):
        arg = _fold_node(args[i])
        nxt = _fold_node(args[i + 1]) if i + 1 < len(args) else None
        if arg.type == "pure-token" and not arg.optional and nxt is not None and nxt.token is None:
            if nxt.type not in ("pure-token", "oneof", "block"):
                out.append(_with_token(arg, nxt))
                i += 2
                continue
            if nxt.type == "oneof" and not nxt.optional and not nxt.multiple:
                out.append(_replace(nxt, name=arg.name, token=arg.token))
                i += 2
                continue
        out.append(arg)
        i += 1
    return out


def _fold_repeats(args: list[Arg]) -> list[Arg]:
    """``key [key ...]`` is one ``key`` flagged multiple, ``key value [key value ...]`` one
    block ``key_value`` flagged multiple, as Redis docs write DEL and MSET (so every key of
    the repetition is the key argument, not only the first)."""
    out: list[Arg] = []
    for arg in args:
        if arg.optional and arg.type != "block" and arg.multiple and out:
            prev = out[-1]
            if prev.name == arg.name and not prev.optional and not prev.multiple and prev.token == arg.token:
                out[-1] = _replace(prev, multiple=True)
                continue
        if arg.optional and arg.type == "block" and arg.children and arg.children[-1].multiple:
            size = len(arg.children)
            repeated = [c.name for c in arg.children]
            if len(out) >= size and [a.name for a in out[-size:]] == repeated and not any(
                a.optional or a.multiple for a in out[-size:]
            ):
                first = out[-size:]
                del out[-size:]
                out.append(Arg(name="_".join(repeated), type="block", multiple=True,
                               children=tuple(first)))
                continue
        out.append(arg)
    return out


def _fold_node(arg: Arg) -> Arg:
    if not arg.children:
        return arg
    children = _fold_tokens(list(arg.children))
    if arg.type == "block" and len(children) == 1 and arg.token is None:
        only = children[0]
        return _replace(only, optional=only.optional or arg.optional,
                        multiple=only.multiple or arg.multiple)
    return _replace(arg, children=tuple(children))


def _token_led_choice(items: list[list[Arg]]) -> Arg | None:
    """``MERGE REPLACE|APPEND|INCR`` read as MERGE followed by one of the words.

    The notation binds ``|`` loosest, so that text splits into ``MERGE REPLACE``, ``APPEND``
    ... ; when the first alternative is a token and one word and every other alternative is
    a single word of the same kind, the token introduces a choice of the words (CLIENT
    LIST's ``TYPE NORMAL|MASTER``, ``SKIPME yes|no``), which is what such a line means.
    """
    first = items[0]
    if len(first) != 2 or first[0].type != "pure-token" or first[0].optional:
        return None
    word = first[1]
    if word.type in ("oneof", "block") or word.optional or word.multiple:
        return None
    for seq in items[1:]:
        if len(seq) != 1 or seq[0].type != word.type or seq[0].optional or seq[0].multiple:
            return None
    choices = (word, *(seq[0] for seq in items[1:]))
    token = first[0]
    return Arg(name=token.name, type="oneof", token=token.token, children=choices)


def _group(inner: list[Arg], optional: bool) -> Arg:
    node = inner[0] if len(inner) == 1 else _block(inner)
    if len(inner) == 2 and inner[0].type == "pure-token" and inner[1].type not in (
        "pure-token", "oneof", "block"
    ):
        node = _with_token(inner[0], inner[1])
    return _replace(node, optional=optional or node.optional)


def _with_token(token: Arg, value: Arg) -> Arg:
    """``TTL s`` -> ``s`` with token ``TTL`` (text for a token whose value is text)."""
    kind = "string" if token.token in _TEXT_TOKENS else value.type
    return _replace(value, token=token.token, type=kind)


def _block(seq: list[Arg]) -> Arg:
    return Arg(name="-".join(a.name for a in seq[:2]), type="block", children=tuple(seq))


def _alt_name(alternatives: list[Arg]) -> str:
    return "-".join(a.name for a in alternatives[:3])


def _replace(arg: Arg, **changes: Any) -> Arg:
    return dataclasses.replace(arg, **changes)
