"""A command's syntax and summary are its handler's docstring (engine/reference.py)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from hotkv_server.commands import load_all
from hotkv_server.commands.strings import get
from hotkv_server.engine import reference
from hotkv_server.engine.registry import COMMANDS


def _fn(doc: str | None, module: str = "tests.nowhere", name: str = "fn") -> Any:
    def fn(ctx: Any, argv: list[bytes]) -> Any:
        return None

    fn.__doc__ = doc
    fn.__module__ = module
    fn.__qualname__ = name
    return fn


def test_one_paragraph_per_command_then_notes() -> None:
    handler = _fn(
        """LPOP key [count]
        Removes and returns the first elements
        of a list.

        RPOP key [count]
        Removes and returns the last elements of a list.

        Notes for the reader: RPOP is not LPOP.
        """
    )
    assert reference.entry(handler, "lpop") == ("key [count]", "Removes and returns the first elements of a list.")
    assert reference.entry(handler, "rpop") == ("key [count]", "Removes and returns the last elements of a list.")
    assert reference.entry(handler, "notes") is None


def test_a_long_syntax_goes_on_over_indented_lines_and_no_arguments_is_the_name_alone() -> None:
    handler = _fn(
        """SET key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT
            unix-time-milliseconds|KEEPTTL]
        Sets the string value of a key.

        CLIENT NO-EVICT ON|OFF
        Sets the client eviction mode.

        DBSIZE
        Returns the number of keys.
        """
    )
    assert reference.entry(handler, "set") == (
        "key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT "
        "unix-time-milliseconds|KEEPTTL]", "Sets the string value of a key.")
    assert reference.entry(handler, "client|no-evict") == ("ON|OFF", "Sets the client eviction mode.")
    assert reference.entry(handler, "dbsize") == ("", "Returns the number of keys.")
    # a name is matched as whole words: DBSIZE is not DB
    assert reference.entry(handler, "db") is None


def test_reference_paragraphs_come_first() -> None:
    handler = _fn("A note.\n\nGET key\nReturns the value.")
    assert reference.entry(handler, "get") is None


def test_without_a_docstring_the_source_beside_the_module_is_read() -> None:
    # as for a module compiled with mypyc (no __doc__) or python -OO
    twin = _fn(None, module=get.__module__, name="get")
    assert twin.__doc__ is None
    assert reference.entry(twin, "get") == ("key", "Returns the string value of a key.")
    assert reference.docstring(_fn(None, module="json.decoder", name="x")) is None
    assert reference.docstring(_fn(None, module="hotkv_server.nosuch", name="x")) is None


def test_every_command_of_the_table_has_its_reference() -> None:
    load_all()
    specs = [spec for top in COMMANDS.values() for spec in (top, *top.subcommands.values())]
    assert len(specs) > 300
    missing = [spec.name for spec in specs if not spec.summary]
    assert missing == []


def test_the_table_is_the_same_without_docstrings() -> None:
    # python -OO strips every docstring: the reference comes from the sources, unchanged
    script = (
        "import json; from hotkv_server.commands import load_all; load_all(); "
        "from hotkv_server.engine.registry import COMMANDS as C; "
        "print(json.dumps(sorted((n, s.syntax, s.summary) for n, s in C.items())))"
    )
    runs = [subprocess.run([sys.executable, *flags, "-c", script], capture_output=True, text=True,
                           check=True).stdout for flags in ([], ["-OO"])]
    assert runs[0] == runs[1]
    assert '"get", "key", "Returns the string value of a key."' in runs[0]

