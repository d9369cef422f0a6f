"""The libraries Redis scripts use beside ``redis``: cjson, cmsgpack, bit and struct.

Each is what Redis 7 bundles, with its behaviour and error texts where scripts can see them:

* ``cjson``: ``encode`` is Lua (``cjson_encode.lua``, so objects list keys in Lua's table
  order as Redis's encoder does); ``decode`` is lua-cjson's parser written out
  (``cjson_decode.py``: its tokens, strtod numbers, escapes, depth limit and error texts),
  building Lua tables (JSON null is ``cjson.null``; numbers are Lua numbers).
* ``cmsgpack``: ``pack(...)`` / ``unpack(s)`` / ``unpack_one`` / ``unpack_limit``; a table
  whose keys are 1..n is an array, another a map; an integral number is a msgpack integer, a
  float a float32 when that is exact, else a float64 (as lua-cmsgpack chooses).
* ``bit``: LuaBitOp 1.0 (``tobit tohex bnot band bor bxor lshift rshift arshift rol ror
  bswap``), results as signed 32-bit numbers.
* ``struct``: Roberto Ierusalimschy's struct (``pack unpack size``) for the formats ``< > =
  !n b B h H i[n] I[n] l L T f d c[n] s x`` (``unpack`` returns the values, then the next
  position).

Every host function returns ``(True, value ...)`` or ``(False, message)``; the Lua wrappers in
``bootstrap.lua`` raise the message at the script's line, as a C library function would.
"""

from __future__ import annotations

import math
import struct as pystruct
from collections.abc import Callable, Iterator
from importlib import resources
from typing import Any

import msgpack
from lupa.lua51 import LuaError, lua_type

from hotkv_server.scripting import cjson_decode


def arg_type(args: tuple[Any, ...], i: int) -> str:
    """Lua's name for the type of argument ``i`` (0-based) as luaL_typerror words it: ``no
    value`` past the last one, ``nil``, ``boolean``, ``number``, ``string``, ``table`` ..."""
    if i >= len(args):
        return "no value"
    value = args[i]
    t = type(value)
    if value is None:
        return "nil"
    if t is bool:
        return "boolean"
    if t is int or t is float:
        return "number"
    if t is bytes:
        return "string"
    return lua_type(value) or "userdata"


def lua_string(value: Any) -> bytes | None:
    """luaL_checklstring's reading: a string as it is, a number as Lua prints it (%.14g),
    else None."""
    t = type(value)
    if t is bytes:
        return bytes(value)
    if t is int or t is float:
        if value != value:  # (printf writes the sign of a NaN: 0/0 is -nan on x86)
            return b"-nan" if math.copysign(1.0, value) < 0 else b"nan"
        return b"%.14g" % value
    return None


def lua_number(value: Any) -> float | None:
    """lua_tonumber's reading: a number, or a string Lua converts (decimal or hex, blanks
    around it); None otherwise."""
    t = type(value)
    if t is int or t is float:
        return float(value)
    if t is not bytes:
        return None
    # luaO_str2d: C's strtod on the C string (it ends at a NUL), blanks around it allowed
    text = value.split(b"\0", 1)[0].strip(b" \t\n\r\v\f")
    found = cjson_decode.strtod(text, 0) if text else None
    return found[0] if found is not None and found[1] == len(text) else None


# --- bit ---------------------------------------------------------------------------------


def _tobit(x: Any) -> int:
    """LuaBitOp's number to bit conversion: the low 32 bits of ``x + 2^52 + 2^51`` as a
    double (so a whole number keeps its low 32 bits, a fraction rounds to nearest-even,
    and a number past 2^51 gives what those bits of its double hold, as in Redis)."""
    if type(x) not in (int, float):
        raise TypeError
    raw = pystruct.pack("<d", float(x) + 6755399441055744.0)
    return int.from_bytes(raw[:4], "little", signed=True)


def _u32(x: Any) -> int:
    return _tobit(x) & 0xFFFFFFFF


def _signed(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - 0x100000000 if x & 0x80000000 else x


_BIT_NAMES = ("tobit", "tohex", "bnot", "band", "bor", "bxor", "lshift", "rshift", "arshift",
              "rol", "ror", "bswap")


#: how many arguments each bit function reads (LuaBitOp checks those and ignores the
#: rest; band, bor and bxor read them all; tohex's second is optional)
_BIT_ARITY = {"tobit": 1, "bnot": 1, "bswap": 1, "tohex": 1}


def _bit_call(name: bytes, *args: Any) -> tuple[Any, ...]:
    fname = name.decode()
    # the arguments read, in LuaBitOp's order: the first, then band/bor/bxor's others from
    # the last one down; tohex's second when given (even nil); the shifts' count
    if fname in ("band", "bor", "bxor"):
        order = [0, *range(len(args) - 1, 0, -1)]
    elif fname == "tohex":
        order = [0, 1] if len(args) > 1 else [0]
    else:
        order = list(range(_BIT_ARITY.get(fname, 2)))
    read: dict[int, float] = {}
    for i in order:
        number = lua_number(args[i]) if i < len(args) else None
        if number is None:  # luaL_checknumber: a number, or a string Lua reads as one
            return False, (f"bad argument #{i + 1} to '{fname}' (number expected, "
                           f"got {arg_type(args, i)})")
        read[i] = number
    nums = [read[i] for i in sorted(read)]
    if fname == "tobit":
        return True, _tobit(nums[0])
    if fname == "tohex":
        n = _tobit(nums[1]) if len(nums) > 1 else 8
        digits = "0123456789abcdef"
        if n < 0:
            n = -n
            digits = "0123456789ABCDEF"
        n = min(n, 8)
        value = _u32(nums[0])
        out = "".join(digits[(value >> (4 * i)) & 15] for i in reversed(range(n)))
        return True, out.encode()
    if fname == "bnot":
        return True, _signed(~_u32(nums[0]))
    if fname in ("band", "bor", "bxor"):
        acc = _u32(nums[0])
        for v in nums[1:]:
            u = _u32(v)
            acc = acc & u if fname == "band" else acc | u if fname == "bor" else acc ^ u
        return True, _signed(acc)
    if fname == "bswap":
        v = _u32(nums[0])
        return True, _signed(int.from_bytes(v.to_bytes(4, "little"), "big"))
    value = _u32(nums[0])
    shift = _tobit(nums[1]) & 31
    if fname == "lshift":
        return True, _signed(value << shift)
    if fname == "rshift":
        return True, _signed(value >> shift)
    if fname == "arshift":
        return True, _signed(_signed(value) >> shift)
    if fname == "rol":
        return True, _signed((value << shift) | (value >> ((32 - shift) & 31)) if shift else value)
    if fname == "ror":
        return True, _signed((value >> shift) | (value << ((32 - shift) & 31)) if shift else value)
    return False, f"unknown bit function {fname}"


# --- struct --------------------------------------------------------------------------------

#: struct's MAXINTSIZE: the largest i/I size
_MAX_INT_SIZE = 32
#: the integer options (their sizes: _FIXED_SIZES, i and I their own)
_STRUCT_INTS = frozenset("bBhHlLTiI")


class _StructError(Exception):
    """A struct function's error: the message Lua's ``error`` is given."""


def _lua_result(fn: Callable[..., tuple[Any, ...]]) -> Callable[..., tuple[Any, ...]]:
    """``fn`` answering as a host function (``_expose``): its values, or ``(False, message)``
    when it raised ``_StructError``."""

    def call(*args: Any) -> tuple[Any, ...]:
        try:
            return fn(*args)
        except _StructError as exc:
            return False, str(exc)

    return call


def _struct_format(args: tuple[Any, ...], name: str) -> Iterator[tuple[str, int, str, int]]:
    """The items of a struct function's format (its first argument), read as the C library
    reads them, one at a time: ``_StructError`` at once when it is not a string (as
    luaL_checkstring words it), and when an item is reached that is invalid."""
    fmt = lua_string(args[0]) if args else None
    if fmt is None:
        raise _StructError(f"bad argument #1 to '{name}' (string expected, got "
                           f"{arg_type(args, 0)})")
    return _struct_errors(_struct_items(fmt, sizing=name == "size"), name)


def _struct_errors(items: Iterator[tuple[str, int, str, int]],
                   name: str) -> Iterator[tuple[str, int, str, int]]:
    try:
        yield from items
    except _BadOption as exc:  # (luaL_argerror: it names the format argument)
        raise _StructError(f"bad argument #1 to '{name}' ({exc})") from None
    except ValueError as exc:
        raise _StructError(str(exc)) from None


class _BadOption(ValueError):
    """A format character that is no option (an argument error of the format)."""


def bad_option(c: str) -> _BadOption:
    # the byte itself in the message (a surrogate escape, encoded back by the sandbox)
    shown = c if c.isascii() else chr(0xDC00 + ord(c))
    return _BadOption(f"invalid format option '{shown}'")


_FIXED_SIZES = {"b": 1, "B": 1, "h": 2, "H": 2, "l": 8, "L": 8, "T": 8, "f": 4, "d": 8, "x": 1}


def _getnum(text: str, i: int, default: int) -> tuple[int, int]:
    """struct's getnum: the digits at ``i`` (a C int, wrapping), or ``default``; and where
    they end."""
    if i >= len(text) or not "0" <= text[i] <= "9":
        return default, i
    value = 0
    while i < len(text) and "0" <= text[i] <= "9":
        value = ((value * 10 + ord(text[i]) - 48 + 2**31) % 2**32) - 2**31
        i += 1
    return value, i


def _struct_items(fmt: bytes, sizing: bool = False) -> Iterator[tuple[str, int, str, int]]:
    """(kind, size, byte order, alignment) of each item of a struct format, as Roberto
    Ierusalimschy's struct reads it (Redis's): a kind ``!`` (its size 0, the character as
    its order) for a character that is no option, which pack and unpack refuse where they
    meet it (``sizing``, struct.size, passes over a letter or digit and refuses the rest
    at once); ValueError for a bad size or alignment. The format ends at a NUL."""
    order, align = "<", 1  # (x86's native order; no alignment until '!')
    text = fmt.split(b"\0", 1)[0].decode("latin-1")
    i = 0
    while i < len(text):
        c = text[i]
        i += 1
        if c in _FIXED_SIZES:
            yield c, _FIXED_SIZES[c], order, align
        elif c in "iI":
            size, i = _getnum(text, i, 4)
            if size > _MAX_INT_SIZE:
                raise ValueError(f"integral size {size} is larger than limit of {_MAX_INT_SIZE}")
            yield c, size, order, align
        elif c == "c":
            size, i = _getnum(text, i, 1)
            yield c, size, order, align
        elif c == "s":
            yield c, 0, order, align
        elif c == " ":
            continue
        elif c in "<>=":
            order = ">" if c == ">" else "<"
        elif c == "!":
            align, i = _getnum(text, i, 8)
            if align <= 0 or align & (align - 1):
                # (met where the option is, as a bad option: kind "?", the message as order)
                yield "?", 0, f"alignment {align} is not a power of 2", 1
                return
        elif sizing:
            if not (c.isascii() and c.isalnum()):
                raise bad_option(c)
        else:
            yield "!", 0, c, align


def _padding(at: int, kind: str, size: int, align: int) -> int:
    """struct's gettoalign: zero bytes before an item at position ``at``."""
    if size == 0 or kind == "c":
        return 0
    size = min(size, align)
    return (size - (at & (size - 1))) & (size - 1)


@_lua_result
def _struct_pack(*args: Any) -> tuple[Any, ...]:
    items = _struct_format(args, "pack")
    values = args[1:]
    out = bytearray()
    vi = 0
    for kind, size, order, align in items:
        out += bytes(_padding(len(out), kind, size, align))
        if kind == "!":
            raise _StructError(f"bad argument #1 to 'pack' ({bad_option(order)})")
        if kind == "?":
            raise _StructError(order)
        if kind == "x":
            out += b"\0"
            continue
        wanted = "string" if kind in "cs" else "number"
        if vi >= len(values):
            # (the C function pushed a nil after its arguments: the first one missing is nil)
            raise _StructError(f"bad argument #{vi + 2} to 'pack' ({wanted} expected, got nil)")
        value = values[vi]
        vi += 1
        if kind in _STRUCT_INTS:
            number = lua_number(value)
            if number is None:
                raise _StructError(f"bad argument #{vi + 1} to 'pack' (number expected, got "
                                   f"{arg_type(values, vi - 1)})")
            # as a 64-bit two's complement, the bytes past 8 zero (the C library's shifts)
            n = _c_uint64(number) & ((1 << (8 * size)) - 1)
            out += n.to_bytes(size, "little" if order == "<" else "big")
        elif kind in "fd":
            number = lua_number(value)
            if number is None:  # luaL_checknumber: a number, or a string Lua reads as one
                raise _StructError(f"bad argument #{vi + 1} to 'pack' (number expected, got "
                                   f"{arg_type(values, vi - 1)})")
            try:
                out += pystruct.pack(order + kind, number)
            except OverflowError:  # past a float's range: C's cast gives an infinity
                out += pystruct.pack(order + kind, math.copysign(math.inf, number))
        elif kind == "c":
            data = lua_string(value)
            if data is None:
                raise _StructError(f"bad argument #{vi + 1} to 'pack' (string expected, got "
                                   f"{arg_type(values, vi - 1)})")
            if size == 0:
                size = len(data)
            if len(data) < size:
                # (the C library names the argument after it: its index moved on already)
                raise _StructError(f"bad argument #{vi + 2} to 'pack' (string too short)")
            out += data[:size]
        elif kind == "s":
            data = lua_string(value)
            if data is None:
                raise _StructError(f"bad argument #{vi + 1} to 'pack' (string expected, got "
                                   f"{arg_type(values, vi - 1)})")
            out += data + b"\0"
    return True, bytes(out)


@_lua_result
def _struct_unpack(*args: Any) -> tuple[Any, ...]:
    if not args or lua_string(args[0]) is None:
        _struct_format(args, "unpack")  # (its type error)
    # the format's type, the data's, the start's, then the format read (as the C library)
    data = lua_string(args[1]) if len(args) > 1 else None
    if data is None:
        raise _StructError(f"bad argument #2 to 'unpack' (string expected, got "
                           f"{arg_type(args, 1)})")
    start = args[2] if len(args) > 2 else None
    number = None if start is None else lua_number(start)
    if start is not None and number is None:
        raise _StructError(f"bad argument #3 to 'unpack' (number expected, got "
                           f"{arg_type(args, 2)})")
    first = 1 if number is None else _c_int64(number)
    if first == 0:
        raise _StructError("bad argument #3 to 'unpack' (offset must be 1 or greater)")
    pos = (first - 1) & 0xFFFFFFFFFFFFFFFF  # (a size_t: a negative start is past any data)
    items = _struct_format(args, "unpack")
    values: list[Any] = []
    for kind, size, order, align in items:
        pos += _padding(pos, kind, size, align)
        if pos + size > len(data):
            raise _StructError("bad argument #2 to 'unpack' (data string too short)")
        if kind == "!":
            raise _StructError(f"bad argument #1 to 'unpack' ({bad_option(order)})")
        if kind == "?":
            raise _StructError(order)
        if kind == "s":
            end = data.find(b"\0", pos)
            if end < 0:
                raise _StructError("unfinished string in data")
            values.append(data[pos:end])
            pos = end + 1
            continue
        if kind == "c" and size == 0:  # c0: the size is the number unpacked just before
            if not values or type(values[-1]) not in (int, float):
                raise _StructError("format 'c0' needs a previous size")
            size = _c_int64(float(values.pop())) & 0xFFFFFFFFFFFFFFFF  # (a size_t)
            if size > len(data) - pos:
                raise _StructError("bad argument #2 to 'unpack' (data string too short)")
        chunk = data[pos : pos + size]
        pos += size
        if kind == "x":
            continue
        if kind in _STRUCT_INTS:
            values.append(_get_integer(chunk, order == "<", kind.islower(), size))
        elif kind in "fd":
            values.append(pystruct.unpack(order + kind, chunk)[0])
        else:
            values.append(chunk)
    end = (pos + 1) & 0xFFFFFFFFFFFFFFFF  # (pushed as a lua_Integer)
    values.append(end - 2**64 if end >= 2**63 else end)
    return (True, *values)


def _c_int64(number: float) -> int:
    """C's cast of a double to a 64-bit integer on x86-64: a NaN, an infinity or a value
    out of range is the minimum."""
    return int(number) if math.isfinite(number) and abs(number) < 2.0**63 else -(2**63)


def _c_uint64(number: float) -> int:
    """struct's cast of a number to its 64-bit unsigned (through the signed type when
    negative)."""
    if math.isfinite(number) and 0 <= number < 2.0**64:
        return int(number)
    if number >= 2.0**64:  # (x86: the high half's conversion overflows to 2^63, XORed away)
        return 0
    return _c_int64(number) & 0xFFFFFFFFFFFFFFFF


def _get_integer(chunk: bytes, little: bool, signed: bool, size: int) -> float:
    """struct's getinteger: the bytes into a 64-bit unsigned (the high ones shifted out),
    sign-extended from the size's top bit (x86's shift for sizes past 8), as a Lua number."""
    value = 0
    for byte in (reversed(chunk) if little else chunk):
        value = ((value << 8) | byte) & 0xFFFFFFFFFFFFFFFF
    if not signed:
        return float(value)
    mask = (0xFFFFFFFFFFFFFFFF << ((size * 8 - 1) & 63)) & 0xFFFFFFFFFFFFFFFF
    if value & mask:
        value |= mask
    return float(value - 2**64 if value >= 2**63 else value)


@_lua_result
def _struct_size(*args: Any) -> tuple[Any, ...]:
    pos = 0
    for kind, size, order, align in _struct_format(args, "size"):
        if kind == "?":
            raise _StructError(order)
        pos += _padding(pos, kind, size, align)
        if kind == "s" or (kind == "c" and size == 0):
            raise _StructError(f"bad argument #1 to 'size' (option '{'s' if kind == 's' else 'c0'}' "
                               "has no fixed size)")
        pos += size
    return True, pos


# --- cjson.decode ----------------------------------------------------------------------------


class _Decoder:
    """cjson.decode's host function: the argument checks of its C function, then
    ``cjson_decode.decode``."""

    def __init__(self, runtime: Any, null: Any) -> None:
        self.table = runtime.table_from
        self.null = null

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        if len(args) != 1:
            return False, "bad argument #1 to 'decode' (expected 1 argument)"
        text = lua_string(args[0])
        if text is None:
            return False, f"bad argument #1 to 'decode' (string expected, got {arg_type(args, 0)})"
        try:
            return True, cjson_decode.decode(text, self.null, self.table)
        except cjson_decode.DecodeError as exc:
            return False, str(exc)


# --- cmsgpack -------------------------------------------------------------------------------


def _pack_value(value: Any, out: bytearray, depth: int) -> None:
    t = type(value)
    if value is None:
        out += b"\xc0"
    elif t is bool:
        out += b"\xc3" if value else b"\xc2"
    elif t is int or t is float:
        if t is float and (math.isnan(value) or math.isinf(value) or value != math.floor(value)):
            as_float = pystruct.unpack(">f", pystruct.pack(">f", value))[0] if not math.isinf(value) else value
            if as_float == value:  # (NaN never equals itself: a double, as lua-cmsgpack)
                out += b"\xca" + pystruct.pack(">f", value)
            else:
                out += b"\xcb" + pystruct.pack(">d", value)
        elif -(2**63) <= value < 2**64:
            out += msgpack.packb(int(value))
        else:
            out += b"\xcb" + pystruct.pack(">d", float(value))
    elif t is bytes:
        n = len(value)
        if n < 32:
            out.append(0xA0 | n)
        elif n < 256:
            out += b"\xd9" + bytes([n])
        elif n < 65536:
            out += b"\xda" + n.to_bytes(2, "big")
        else:
            out += b"\xdb" + n.to_bytes(4, "big")
        out += value
    elif lua_type(value) == "table":
        if depth > 16:  # lua-cmsgpack's LUACMSGPACK_MAX_NESTING: deeper tables are nil
            out += b"\xc0"
            return
        keys = list(value.keys())
        n = len(keys)
        if all(type(k) in (int, float) and k == int(k) and k >= 1 for k in keys) and (
            sorted(int(k) for k in keys) == list(range(1, n + 1))
        ):
            _header(out, n, 0x90, b"\xdc", b"\xdd")
            for i in range(1, n + 1):
                _pack_value(value[i], out, depth + 1)
        else:
            _header(out, n, 0x80, b"\xde", b"\xdf")
            for k in keys:
                _pack_value(k, out, depth + 1)
                _pack_value(value[k], out, depth + 1)
    else:
        out += b"\xc0"


def _header(out: bytearray, n: int, fix: int, h16: bytes, h32: bytes) -> None:
    if n < 16:
        out.append(fix | n)
    elif n < 65536:
        out += h16 + n.to_bytes(2, "big")
    else:
        out += h32 + n.to_bytes(4, "big")


def _msgpack_pack(count: int, *values: Any) -> tuple[Any, ...]:
    if count < 1:
        return False, "bad argument #0 to 'pack' (MessagePack pack needs input.)"
    out = bytearray()
    padded = list(values) + [None] * (count - len(values))
    for v in padded[:count]:
        _pack_value(v, out, 1)
    return True, bytes(out)


class _Unpacker:
    def __init__(self, runtime: Any) -> None:
        self.table = runtime.table_from

    def unpack(self, *args: Any) -> tuple[Any, ...]:
        return self(args, "unpack", 0, 0)

    def unpack_one(self, *args: Any) -> tuple[Any, ...]:
        offset = _opt_integer(args, 1, "unpack_one")
        return offset if type(offset) is tuple else self(args, "unpack_one", 1, offset)

    def unpack_limit(self, *args: Any) -> tuple[Any, ...]:
        limit = _opt_integer(args, 1, "unpack_limit", required=True)
        if type(limit) is tuple:
            return limit
        offset = _opt_integer(args, 2, "unpack_limit")
        return offset if type(offset) is tuple else self(args, "unpack_limit", limit, offset)

    def __call__(self, args: tuple[Any, ...], name: str, limit: Any, offset: Any) -> tuple[Any, ...]:
        data = lua_string(args[0]) if args else None
        if data is None:
            return False, f"bad argument #1 to '{name}' (string expected, got {arg_type(args, 0)})"
        limit = int(limit or 0)
        offset = int(offset or 0)
        if offset < 0 or limit < 0:  # (printed as C ints; lua-cmsgpack prints the length
            # as the limit)
            return False, (f"Invalid request to unpack with offset of {_c_int(offset)} and "
                           f"limit of {_c_int(len(data))}.")
        if offset > len(data):
            return False, (f"Start offset {_c_int(offset)} greater than input length "
                           f"{_c_int(len(data))}.")
        unpacker = msgpack.Unpacker(raw=True, strict_map_key=False, use_list=True)
        unpacker.feed(data[offset:])
        values: list[Any] = []
        decode_all = not limit and not offset  # (lua-cmsgpack's: else at most limit objects)
        try:
            while decode_all or len(values) < limit:
                try:
                    values.append(self.lua(unpacker.unpack()))
                except msgpack.OutOfData:
                    break
        except (ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError):
            return False, "Bad data format in input."
        if not values and data[offset:] and (decode_all or limit):  # (a cut object)
            return False, "Missing bytes in input."
        consumed = offset + unpacker.tell()
        if not decode_all:
            next_offset = -1 if consumed >= len(data) else consumed
            return (True, next_offset, *values)
        return (True, *values)

    def lua(self, value: Any) -> Any:
        if isinstance(value, list):
            return self.table([self.lua(v) for v in value])
        if isinstance(value, dict):
            return self.table({self.lua(k): self.lua(v) for k, v in value.items()})
        return value


def _opt_integer(args: tuple[Any, ...], i: int, name: str,
                 required: bool = False) -> Any:
    """luaL_optinteger (luaL_checkinteger when ``required``) of argument ``i``: its value
    (0 when absent), or the (False, message) of a bad one."""
    value = args[i] if i < len(args) else None
    if value is None and not required:
        return 0
    number = lua_number(value)
    if number is None:
        return False, f"bad argument #{i + 1} to '{name}' (number expected, got {arg_type(args, i)})"
    return _c_int64(number)  # (lua_Integer's cast)


def _c_int(value: int) -> int:
    """``value`` as printf's %d shows a wider integer: its low 32 bits, signed."""
    return (value + 2**31) % 2**32 - 2**31


class LibError(Exception):
    """A library function's error, already prefixed with the script line that called it
    (bytes that are no UTF-8 as surrogate escapes)."""


def _expose(fn: Any, fail: Any) -> Any:
    """A host function for Lua: ``fn``'s values, or ``fail(message)`` raising LibError."""

    def call(*args: Any) -> Any:
        result = fn(*args)
        if not result[0]:
            fail(result[1])
        values = result[1:]
        return values[0] if len(values) == 1 else values

    return call


def _bit_function(name: bytes) -> Any:
    return lambda *args: _bit_call(name, *args)


def _noop(*args: Any) -> None:
    return None


def install(runtime: Any, host: Any, null: Any, fail: Any) -> None:
    """Put the library tables into ``host`` (the table bootstrap.lua is given). ``fail``
    raises a LibError naming the calling script line."""
    bit = runtime.table()
    for name in _BIT_NAMES:
        bit[name.encode()] = _expose(_bit_function(name.encode()), fail)
    host[b"bit"] = bit
    struct = runtime.table()
    struct[b"pack"] = _expose(_struct_pack, fail)
    struct[b"unpack"] = _expose(_struct_unpack, fail)
    struct[b"size"] = _expose(_struct_size, fail)
    host[b"struct"] = struct
    source = resources.files("hotkv_server.scripting").joinpath("cjson_encode.lua").read_bytes()
    lua_encode = runtime.execute(source, null, name="=hotkv_sandbox")

    def encode(*args: Any) -> Any:
        if len(args) != 1:
            fail("bad argument #1 to 'encode' (expected 1 argument)")
        try:
            return lua_encode(args[0])
        except LuaError as exc:
            fail(_lua_message(exc))

    cjson = runtime.table()
    cjson[b"encode"] = encode
    cjson[b"decode"] = _expose(_Decoder(runtime, null), fail)
    cjson[b"null"] = null
    for option in (b"encode_keep_buffer", b"encode_max_depth", b"decode_max_depth",
                 b"encode_number_precision", b"encode_invalid_numbers",
                 b"decode_invalid_numbers", b"encode_sparse_array"):
        cjson[option] = _noop
    host[b"cjson"] = cjson
    unpacker = _Unpacker(runtime)
    cmsgpack = runtime.table()
    cmsgpack[b"pack"] = _expose(lambda *a: _msgpack_pack(len(a), *a), fail)
    cmsgpack[b"unpack"] = _expose(unpacker.unpack, fail)
    cmsgpack[b"unpack_one"] = _expose(unpacker.unpack_one, fail)
    cmsgpack[b"unpack_limit"] = _expose(unpacker.unpack_limit, fail)
    host[b"cmsgpack"] = cmsgpack


def _lua_message(exc: Exception) -> str:
    message = exc.args[0] if exc.args else str(exc)
    if isinstance(message, bytes):
        message = message.decode("utf-8", "replace")
    return str(message)
