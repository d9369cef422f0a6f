"""One Lua 5.1 state (lupa's ``lupa.lua51``) set up as Redis 7's script sandbox.

Lua 5.1 is what Redis embeds, so scripts see the same language (``unpack``, ``loadstring``,
``#`` on tables with holes, integer-valued doubles) and the same table iteration order for
what ``cjson.encode`` and ``pairs`` walk. The Lua side of the sandbox is ``bootstrap.lua``;
this module gives it the host functions (``redis.call`` into the server, cjson decoding,
cmsgpack, bit, struct, sha1hex, log) and compiles and runs scripts.

No Python object is reachable from a script: every host function sits behind a Lua closure,
the ``python`` module lupa installs is removed, and lupa's attribute access on Python objects
is refused by an attribute filter (a script that got hold of one could not look inside).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from importlib import resources
from typing import Any

import lupa.lua51 as lua51

from hotkv_server import __version__
from hotkv_server.scripting import libs

log = logging.getLogger("hotkv")

_LOG_LEVELS = {0: logging.DEBUG, 1: logging.INFO, 2: logging.WARNING, 3: logging.WARNING}


def _refuse_attribute(obj: Any, name: Any, is_setting: bool) -> Any:
    raise AttributeError("not accessible from a script")


class HostError(Exception):
    """Raised by ``redis.call`` for an error reply: Lua sees it as the error of the call."""

    def __init__(self, text: bytes) -> None:
        super().__init__(text)
        self.text = text


def _error_of(exc: Any) -> tuple[Any, Any]:
    """What bootstrap.lua's error handler and pcall see of an error raised by a host function:
    ("reply", the error reply's text) for redis.call, ("lib", a message) for anything else."""
    if isinstance(exc, HostError):
        return b"reply", exc.text
    if isinstance(exc, libs.LibError):
        return b"lib", str(exc).encode("utf-8", "surrogateescape")
    if isinstance(exc, BaseException):
        return b"lib", str(exc).encode("utf-8", "replace")
    return None, None


def sha1hex(body: bytes) -> str:
    return hashlib.sha1(body).hexdigest()


def _version_num() -> int:
    parts = ([int(p) for p in __version__.split(".")[:3] if p.isdigit()] + [0, 0, 0])[:3]
    return (parts[0] << 16) | (parts[1] << 8) | parts[2]


class Sandbox:
    """The Lua state and the functions the host gives it.

    ``call`` and ``pcall`` are the server side of ``redis.call`` / ``redis.pcall``: given the
    Lua arguments they return ``(True, value)`` or ``(False, error table)``; ``killed`` tells
    the count hook whether SCRIPT KILL asked the running script to stop; ``setresp`` sets
    the running script's protocol.
    """

    def __init__(
        self,
        call: Callable[..., Any],
        pcall: Callable[..., Any],
        killed: Callable[[], bool],
        setresp: Callable[..., Any],
        acl_check_cmd: Callable[..., Any],
    ) -> None:
        self.runtime = lua51.LuaRuntime(
            encoding=None,
            register_eval=False,
            register_builtins=False,
            unpack_returned_tuples=True,
            attribute_filter=_refuse_attribute,
        )
        lua = self.runtime
        lua.execute(b"python = nil")
        # cjson.null: Redis's is a NULL light userdata, which prints as "userdata: (nil)";
        # a userdata of our own prints so too (its metatable is hidden: bootstrap.lua)
        null = lua.eval(b"newproxy(true)")
        lua.execute(b"getmetatable(...).__tostring = function() return 'userdata: (nil)' end",
                    null)
        host = lua.table_from({
            b"call": call,
            b"pcall": pcall,
            b"killed": killed,
            b"setresp": setresp,
            b"acl_check_cmd": acl_check_cmd,
            b"error_of": _error_of,
            b"sha1hex": self._sha1hex,
            b"log": self._log,
            b"cjson_null": null,
            b"version_text": __version__.encode(),
            b"version_num": _version_num(),
        })
        self._where: Any = None
        self._called_as: Any = None
        libs.install(lua, host, null, self.fail)
        source = resources.files("hotkv_server.scripting").joinpath("bootstrap.lua").read_bytes()
        exported = lua.execute(source, host, name="=hotkv_sandbox")
        #: ``run_varargs(fn, nkeys, *keys, *args)``: bootstrap.lua's run, called directly
        #: (the engine's hot path); it returns exactly (ok, result)
        self.run_varargs: Callable[..., tuple[bool, Any]] = exported[b"run"]
        self._compile = exported[b"compile"]
        self._where = exported[b"where"]
        self._called_as = exported[b"called_as"]
        self.table = lua.table_from
        # the base library functions the sandbox does not offer go from the host's globals too
        lua.execute(b"os = nil; io = nil; package = nil; require = nil; dofile = nil; "
                    b"loadfile = nil; debug = nil; module = nil; newproxy = nil")

    def fail(self, message: str) -> Any:
        """Raise a library error the way luaL_error does: prefixed with the calling line;
        an argument error names the function as the script called it (luaL_argerror:
        ``'?'`` through pcall)."""
        if message.startswith("bad argument #") and self._called_as is not None:
            head, sep, rest = message.partition(" to '")
            if sep and "'" in rest:
                name = self._called_as()
                shown = name.decode("utf-8", "replace") if isinstance(name, bytes) else "?"
                message = f"{head} to '{shown}'{rest[rest.index(chr(39)) + 1:]}"
        where = self._where() if self._where is not None else b""
        prefix = where.decode("utf-8", "replace") if isinstance(where, bytes) else ""
        raise libs.LibError(prefix + message)

    @staticmethod
    def _sha1hex(value: Any) -> Any:
        # lua_tolstring: a number as Lua prints it, anything but a string or number as ""
        value = libs.lua_string(value)
        if value is None:
            value = b""
        return sha1hex(value).encode()

    @staticmethod
    def _log(level: Any, message: bytes) -> None:
        if level not in _LOG_LEVELS:
            return
        log.log(_LOG_LEVELS[level], "%s", message.decode("utf-8", "replace"))

    def compile(self, body: bytes) -> tuple[Any, str | None]:
        """(the Lua function, None), or (None, Lua's message) for a script that does not compile."""
        result = self._compile(body)
        if isinstance(result, tuple):
            fn, message = result[0], result[1] if len(result) > 1 else b""
            if fn is None:
                return None, (message or b"").decode("utf-8", "replace")
            return fn, None
        return result, None

    def run_tables(self, fn: Any, keys: list[bytes], args: list[bytes]) -> tuple[bool, Any]:
        """Call a compiled script with KEYS and ARGV sent as two tables (for many: Lua's C
        stack holds a few thousand values; ``run_varargs`` takes the rest): (True, result)
        or (False, error table)."""
        outcome: tuple[bool, Any] = self.run_varargs(fn, -1, self.table(keys), self.table(args))
        return outcome
