"""A command's reference entry, read from its handler's docstring.

The docstring of a command handler is the command's reference, as a CLI framework takes a
command's help from its function's docstring: one paragraph per command the handler
serves, its first line the command's name in capitals and its syntax, the lines after it
the summary (``COMMAND DOCS``, ``<CONTAINER> HELP`` and docs/commands.md show both)::

    @command("srem", arity=-3, flags="write fast", key="RW delete")
    def srem(ctx: Context, argv: list[bytes]) -> Any:
        \"""SREM key member [member ...]
        Removes one or more members from a set. Deletes the set if the last member was
        removed.
        \"""

A long syntax goes on over indented lines. A handler under several stacked ``@command``
specs has one paragraph per command (``LPOP ...``, then ``RPOP ...``); paragraphs after
the reference ones (anything not starting with an upper-case command name) are notes for
the reader and are not read. So the syntax and the summary are written once, where the
handler is, and nowhere else.

The docstring is read from the function, or, where it has none (a module compiled with
mypyc keeps no docstrings, nor does ``python -OO``), from the module's source file beside
it, so the reference is the same in every build.
"""

from __future__ import annotations

import ast
import inspect
from functools import cache
from pathlib import Path
from typing import Any

#: the package's folder: ``hotkv_server.commands.strings`` is ``<here>/commands/strings.py``
_PACKAGE = Path(__file__).resolve().parents[1]


def entry(handler: Any, name: str) -> tuple[str, str] | None:
    """The (syntax, summary) of command ``name`` (``"get"``, ``"config|get"``) in the
    docstring of ``handler``, or None when it has no paragraph for that command."""
    doc = docstring(handler)
    if not doc:
        return None
    title = name.upper().replace("|", " ")
    for paragraph in inspect.cleandoc(doc).split("\n\n"):
        lines = paragraph.split("\n")
        head = lines[0]
        if not _is_title(head):
            break  # the reference paragraphs come first; the rest are notes
        if head != title and not head.startswith(title + " "):
            continue
        syntax = [head[len(title):].strip()]
        rest = lines[1:]
        while rest and rest[0][:1].isspace():  # the syntax goes on, indented
            syntax.append(rest.pop(0).strip())
        return " ".join(s for s in syntax if s), " ".join(line.strip() for line in rest)
    return None


def _is_title(line: str) -> bool:
    """Whether ``line`` starts with a command name in capitals (``GET``, ``AMEM.CONV.GET``,
    ``CLIENT NO-EVICT``): a reference paragraph, not a note."""
    word = line.split(" ", 1)[0]
    return len(word) > 1 and word[0].isalpha() and word.isupper() and _NAME_CHARS.issuperset(word)


_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def docstring(handler: Any) -> str | None:
    """The docstring of ``handler``, from the function or else from its module's source."""
    doc = getattr(handler, "__doc__", None)
    if doc:
        return str(doc)
    module = getattr(handler, "__module__", "") or ""
    package, _, rest = module.partition(".")
    if package != _PACKAGE.name or not rest:
        return None
    source = _PACKAGE.joinpath(*rest.split(".")).with_suffix(".py")
    return _source_docstrings(source).get(getattr(handler, "__qualname__", ""))


@cache
def _source_docstrings(source: Path) -> dict[str, str]:
    """The docstrings of a source file's module-level functions, by name."""
    try:
        tree = ast.parse(source.read_text(encoding="utf-8"))
    except OSError:
        return {}
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                found[node.name] = doc
    return found
