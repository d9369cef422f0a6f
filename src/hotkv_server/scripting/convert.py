"""Reply conversion between the server and Lua, both ways, with Redis 7's rules.

Server reply -> Lua (what ``redis.call`` returns), by the script's protocol (``redis.setresp``):

==================  ===========================  ==============================
reply               RESP2 (default)              RESP3 (``redis.setresp(3)``)
==================  ===========================  ==============================
bulk string         string                       string
integer             number                       number
simple string       ``{ok = "OK"}``              ``{ok = "OK"}``
error               ``{err = "ERR ..."}``        ``{err = "ERR ..."}``
null, null array    ``false``                    ``nil``
array               table (1..n)                 table (1..n)
map                 flat table k, v, k, v        ``{map = {k = v}}``
set                 table (1..n)                 ``{set = {member = true}}``
double              string                       ``{double = number}``
boolean             number 1 / 0                 ``true`` / ``false``
verbatim string     string                       ``{verbatim_string = {format, string}}``
==================  ===========================  ==============================

Lua -> reply (what a script returns): a string is a bulk
string; a number an integer (truncated toward zero; out of range or NaN is the minimum
64-bit integer, as C's cast gives on the machines Redis runs on); ``true`` is 1 in RESP2 and
``#t`` in RESP3, ``false`` a null in RESP2 and ``#f`` in RESP3 (the *script's* protocol: booleans become RESP3
booleans only after ``redis.setresp(3)``, as Redis 7.0 does); a table with a string ``err``
is an error, with a string ``ok`` a status, with ``double``, ``map``, ``set``,
``big_number`` or ``verbatim_string`` the RESP3 type (each shown as RESP2 has it to a RESP2
caller); any other table is an array of its items 1, 2, ... up to the first nil; nil and
anything else (a function, cjson.null) is a null.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import hiredis
from lupa.lua51 import lua_type

from hotkv_server.engine.args import LLONG_MAX, LLONG_MIN
from hotkv_server.engine.doubles import encode_double
from hotkv_server.engine.replies import (
    NULL_ARRAY,
    Double,
    ErrorReply,
    Push,
    Raw,
    Simple,
    Verbatim,
)

#: how many {ok = "OK"} tables ToLua has Lua make in one call
OK_BATCH = 64


class ToLua:
    """Turns server replies into Lua values with one Lua runtime's table constructor."""

    def __init__(self, runtime: Any) -> None:
        self.table = runtime.table_from
        self.new_table = runtime.table
        # built by Lua from a call's arguments: a few times cheaper than lupa's table_from.
        # Named as the sandbox's own code, so the line hook of SCRIPT KILL never raises in them
        helpers = runtime.execute(
            b"return function(s) return {ok = s} end, function(...) return {...} end, "
            b"function(n) local t = {} for i = 1, n do t[i] = {ok = 'OK'} end return unpack(t, 1, n) end, "
            b"function(t) local d = t.double return d == 0 and 1 / d < 0 end",
            name="=hotkv_sandbox")
        self._status, self._array, self._oks, negative_zero = helpers
        #: whether a ``{double = 0}`` table holds -0 (lupa hands a whole Lua number to
        #: Python as an int, and -0.0 as 0: only Lua can tell): FromLua asks it
        self.negative_zero: Callable[[Any], bool] = negative_zero
        # {ok = "OK"} is the most common table a redis.call returns (SET, MSET, RENAME ...):
        # Lua makes them OK_BATCH at a time and each is handed out once (a script gets a
        # table of its own, as ever), so most cost no call into Lua of their own
        self._ok_pool: list[Any] = []

    def reply(self, value: Any, resp: int) -> Any:
        """One reply (not an error at the top: the caller handles those) as a Lua value."""
        t = type(value)
        if t is bytes or t is int:
            return value
        if t is Simple:
            if value == "OK":
                pool = self._ok_pool
                if not pool:
                    pool.extend(self._oks(OK_BATCH))
                return pool.pop()
            return self._status(value.encode())
        if value is None or value is NULL_ARRAY:
            return False if resp == 2 else None
        if t is list or t is tuple or t is Push:
            if len(value) <= 200:  # Lua's C stack takes a few thousand values per call
                return self._array(*[self._item(v, resp) for v in value])
            return self.table([self._item(v, resp) for v in value])
        if t is ErrorReply:
            return self.table({b"err": value.encode("utf-8", "replace")})
        if t is str:
            return value.encode()
        if t is bool:
            if resp == 2:
                return 1 if value else 0
            return value
        if t is float:
            if resp == 2:
                return encode_double(value)
            return self.table({b"double": value})
        if t is dict:
            if resp == 2:
                flat: list[Any] = []
                for k, v in value.items():
                    flat.append(self._item(k, resp))
                    flat.append(self._item(v, resp))
                return self.table(flat)
            inner = self.new_table()
            for k, v in value.items():
                inner[self._key(k, resp)] = self._item(v, resp)
            return self.table({b"map": inner})
        if t is set or t is frozenset:
            if resp == 2:
                return self.table([self._item(v, resp) for v in value])
            members = self.new_table()
            for v in value:
                members[self._key(v, resp)] = True
            return self.table({b"set": members})
        if t is Verbatim:
            if resp == 2:
                return value.text
            return self.table({b"verbatim_string": self.table(
                {b"format": value.fmt.encode(), b"string": value.text})})
        if t is Raw:
            return self.reply(_parse_raw(value.data), resp)
        if isinstance(value, bytes | bytearray | memoryview):
            return bytes(value)
        if isinstance(value, int):
            return int(value)
        if isinstance(value, float):
            return self.reply(float(value), resp)
        if isinstance(value, str):
            return str(value).encode()
        return False if resp == 2 else None

    def _item(self, value: Any, resp: int) -> Any:
        # an error inside an array (EXEC-like replies) is an {err=...} table as well
        return self.reply(value, resp)

    def _key(self, value: Any, resp: int) -> Any:
        key = self.reply(value, resp)
        return key if key is not None else False


def _parse_raw(raw: bytes) -> Any:
    """An already encoded reply (COMMAND's sets) back to values, for the conversion."""
    reader = hiredis.Reader(notEnoughData=None)
    reader.feed(bytes(raw))
    value = reader.gets()
    return _from_hiredis(value)


def _from_hiredis(value: Any) -> Any:
    if isinstance(value, list):
        return [_from_hiredis(v) for v in value]
    if isinstance(value, dict):
        return {_from_hiredis(k): _from_hiredis(v) for k, v in value.items()}
    if isinstance(value, hiredis.ReplyError):
        return ErrorReply(str(value))
    return value


def lua_number_to_integer(value: float) -> int:
    """A Lua number as Redis replies it: truncated toward zero, LLONG_MIN when it does not fit."""
    if type(value) is int:
        if LLONG_MIN <= value <= LLONG_MAX:
            return value
        return LLONG_MIN
    if math.isnan(value) or not (LLONG_MIN <= value < 2.0**63):
        return LLONG_MIN
    return int(value)


class FromLua:
    """Turns what a script returned into a reply value; ``proto`` is the script's protocol
    (``redis.setresp``): Redis 7.0 turns Lua booleans into 1 / null under RESP2 and into
    RESP3 booleans only after ``redis.setresp(3)``, whatever the caller speaks."""

    def __init__(self, proto: int, caller_proto: int, negative_zero: Callable[[Any], bool]) -> None:
        self.proto = proto
        self.caller_proto = caller_proto
        #: ToLua.negative_zero of the script's runtime
        self.negative_zero = negative_zero
        #: the error replies made from error tables, at any depth, that are not yet counted
        #: in errorstats; ``counted``: some were (redis.pcall's, marked by Redis's
        #: ``ignore_error_stats_update``)
        self.fresh: list[ErrorReply] = []
        self.counted = False

    def reply(self, value: Any) -> Any:
        t = type(value)
        if t is bytes:
            return value
        if t is int or t is float:
            return lua_number_to_integer(value)
        if t is bool:
            if self.proto == 2:
                return 1 if value else None
            return value
        if value is None:
            return None
        if lua_type(value) == "table":
            return self._table(value)
        return None

    def _table(self, table: Any) -> Any:
        err = table[b"err"]
        if type(err) is bytes:
            # (Redis reads the text as a C string: it ends at a NUL)
            made = ErrorReply(err.split(b"\0", 1)[0].decode("utf-8", "replace"))
            if table[b"ignore_error_stats_update"] is True:
                self.counted = True
            else:
                self.fresh.append(made)
            return made
        ok = table[b"ok"]
        if type(ok) is bytes:
            # a C string (it ends at a NUL), CR and LF made blanks; its other bytes as they are
            status = ok.split(b"\0", 1)[0].replace(b"\r", b" ").replace(b"\n", b" ")
            if status.isascii():
                return Simple(status.decode("ascii"))
            return Raw(b"+%b\r\n" % status)
        double = table[b"double"]
        if type(double) in (int, float):
            if double == 0 and self.negative_zero(table):
                return Double(-0.0)  # (a RESP3 double reply of -0 that a script hands back)
            return Double(double)  # Redis 7.0 prints a script's double with %.17g
        big = table[b"big_number"]
        if type(big) is bytes:
            text = big.decode("utf-8", "replace")
            if self.caller_proto == 2:
                return big
            return Raw(b"(%b\r\n" % text.replace("\r", " ").replace("\n", " ").encode())
        mapping = table[b"map"]
        if lua_type(mapping) == "table":
            out: dict[Any, Any] = {}
            for k, v in mapping.items():
                out[self._hashable(self.reply(k))] = self.reply(v)
            return out
        members = table[b"set"]
        if lua_type(members) == "table":
            return {self._hashable(self.reply(k)) for k in members.keys()}  # noqa: SIM118 (a Lua table)
        verbatim = table[b"verbatim_string"]
        if lua_type(verbatim) == "table":
            fmt, text = verbatim[b"format"], verbatim[b"string"]
            if type(fmt) is bytes and type(text) is bytes:
                return Verbatim(text, fmt.decode("utf-8", "replace")[:3])
        items: list[Any] = []
        i = 1
        while True:
            item = table[i]
            if item is None:
                break
            items.append(self.reply(item))
            i += 1
        return items

    @staticmethod
    def _hashable(value: Any) -> Any:
        if isinstance(value, list):
            return tuple(value)
        if isinstance(value, dict | set):
            return repr(value)
        return value
