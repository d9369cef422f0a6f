"""Reply encoding for RESP2 and RESP3 (parsing of requests is hiredis.Reader's job).

The value types live in ``hotkv_server.engine.replies`` (handlers return them without
knowing the wire); they are importable from here too.

Handlers return plain Python values and this module turns them into bytes:

==================  ==========================  ==========================
value               RESP3                       RESP2
==================  ==========================  ==========================
``bytes``/``str``   bulk string                 bulk string
``int``             integer                     integer
``bool``            boolean ``#t``/``#f``       integer 1/0
``float``           double ``,``                bulk string
``Double``          double ``,`` (``%.17g``)     bulk string (``%.17g``)
``None``            null ``_``                  null bulk ``$-1``
``list``/``tuple``  array                       array
``dict``            map ``%``                   flat array k, v, k, v
``set``             set ``~``                   array
``OrderedSet``      set ``~`` (in this order)   array
``Simple``          simple string ``+``         simple string
``ErrorReply``      error ``-``                 error
``NULL_ARRAY``      null ``_``                  null array ``*-1``
``Push``            push ``>``                  array
``Verbatim``        verbatim ``=``              bulk string
``Raw``             the bytes as they are       the bytes as they are
==================  ==========================  ==========================
"""

from __future__ import annotations

from typing import Any, Final

from hotkv_server.engine.doubles import encode_double, format_double
from hotkv_server.engine.replies import (
    NULL_ARRAY,
    OK,
    PONG,
    QUEUED,
    Double,
    ErrorReply,
    OrderedSet,
    Push,
    Raw,
    Simple,
    Spliced,
    Verbatim,
)

__all__ = [
    "INT_REPLIES", "NULL_ARRAY", "OK", "OK_BYTES", "PONG", "QUEUED", "ErrorReply", "OrderedSet", "Push", "Raw",
    "Simple",
    "Verbatim", "encode", "encode_double", "encode_error",
]

OK_BYTES = b"+OK\r\n"  # the encoded OK (the connection writes it without a call)
_NULL2 = b"$-1\r\n"
_NULL3 = b"_\r\n"
#: the encoded integers 0..1023 (LPUSH, HSET, INCR, EXISTS ... answer small counts)
INT_REPLIES = _INT_CACHE = [b":%d\r\n" % i for i in range(0, 1024)]
#: encoded str map keys (record field names); bounded, since a map's keys may be data
_FIELD_NAMES: dict[str, bytes] = {}
_FIELD_NAMES_MAX = 4096


def _bulk_str(text: str) -> bytes:
    data = text.encode()
    return b"$%d\r\n%b\r\n" % (len(data), data)


#: ``$<n>\r\n`` of the common lengths (bytes formatting is the slow part of a long array)
_BULK_HEADS: Final = [b"$%d\r\n" % i for i in range(1024)]
#: the same after the previous element's ``\r\n``: an array of bulk strings is written as
#: ``*<n>\r\n``, ``$<len>\r\n``, item, ``\r\n$<len>\r\n``, item, ..., ``\r\n``
_NEXT_HEADS: Final = [b"\r\n$%d\r\n" % i for i in range(1024)]


def _bulk_array(items: list[bytes]) -> bytes:
    """A whole non-empty array of bytes elements, ``*<n>`` included, as one join of its
    parts (TypeError for an element of another type, before anything is written). Compiled,
    the loop runs in C: a header from a table and the item per element, about half the
    time of building the headers with ``map`` and interleaving them by slices (LRANGE 100)."""
    n = len(items)
    parts = [b""] * (2 * n + 2)  # sized once (appends would grow it by reallocs)
    parts[0] = b"*%d\r\n" % n
    heads = _BULK_HEADS
    i = 1
    for item in items:
        size = len(item)  # (past the tables: formatted, after the previous item's \r\n)
        parts[i] = heads[size] if size < 1024 else (b"\r\n$%d\r\n" if i > 1 else b"$%d\r\n") % size
        parts[i + 1] = item
        heads = _NEXT_HEADS
        i += 2
    parts[i] = b"\r\n"
    return b"".join(parts)


def _bulk_into(item: bytes, out: list[bytes]) -> None:
    """One bulk string as three parts of ``out`` (a header from the table: cheaper than
    formatting it, compiled)."""
    size = len(item)
    out.append(_BULK_HEADS[size] if size < 1024 else b"$%d\r\n" % size)
    out.append(item)
    out.append(b"\r\n")


def encode(value: Any, proto: int) -> bytes:
    """Encode one reply for protocol 2 or 3."""
    # Fast paths for the replies of the hot commands (GET, SET, INCR, PING, a miss): one
    # reply is encoded per command, so skipping the list and the join here is measurable.
    t = type(value)
    if t is bytes:
        return b"$%d\r\n%b\r\n" % (len(value), value)
    if t is Simple:
        return OK_BYTES if value is OK else b"+%b\r\n" % value.encode()
    if t is int:
        return _INT_CACHE[value] if 0 <= value < 1024 else b":%d\r\n" % value
    if value is None:
        return _NULL3 if proto == 3 else _NULL2
    out: list[bytes] = []
    _encode_into(value, proto, out)
    return out[0] if len(out) == 1 else b"".join(out)


def _encode_into(value: Any, proto: int, out: list[bytes]) -> None:
    t = type(value)
    if t is bytes:
        out.append(b"$%d\r\n%b\r\n" % (len(value), value))
    elif t is Simple:
        out.append(b"+%b\r\n" % value.encode())
    elif t is int:
        out.append(_INT_CACHE[value] if 0 <= value < 1024 else b":%d\r\n" % value)
    elif value is None:
        out.append(_NULL3 if proto == 3 else _NULL2)
    elif t is str:
        data = value.encode()
        out.append(b"$%d\r\n%b\r\n" % (len(data), data))
    elif t is list or t is tuple:
        # an array of bulk strings (LRANGE, HVALS ...): one join, tried when it starts with
        # bytes. An element that is not bytes-like (None, an int, a str, a nested array, a
        # Raw) makes len() or the join raise TypeError: then element by element. Every
        # bytes-like element a reply holds (bytes, bytearray, a bytes subclass) is a bulk
        # string of its bytes either way
        if value and type(value[0]) is bytes:
            try:
                out.append(_bulk_array(value if t is list else list(value)))
                return
            except TypeError:
                pass
        out.append(b"*%d\r\n" % len(value))
        for item in value:
            if type(item) is bytes:  # the common element, without the recursive call
                _bulk_into(item, out)
            else:
                _encode_into(item, proto, out)
    elif t is dict:
        if proto == 3:
            out.append(b"%%%d\r\n" % len(value))
        else:
            out.append(b"*%d\r\n" % (2 * len(value)))
        for key, item in value.items():
            if type(key) is bytes:  # HGETALL's fields
                _bulk_into(key, out)
            elif type(key) is str:  # a record's field name: a handful of names, encoded once
                field_bytes = _FIELD_NAMES.get(key)
                if field_bytes is None:
                    field_bytes = _bulk_str(key)
                    if len(_FIELD_NAMES) < _FIELD_NAMES_MAX:
                        _FIELD_NAMES[key] = field_bytes
                out.append(field_bytes)
            else:
                _encode_into(key, proto, out)
            kind = type(item)
            if kind is bytes:
                _bulk_into(item, out)
            elif kind is int:
                out.append(_INT_CACHE[item] if 0 <= item < 1024 else b":%d\r\n" % item)
            else:
                _encode_into(item, proto, out)
    elif t is float or t is Double:
        text = encode_double(value) if t is float else format_double(value)
        if proto == 3:
            out.append(b",%b\r\n" % text)
        else:
            out.append(b"$%d\r\n%b\r\n" % (len(text), text))
    elif t is bool:
        if proto == 3:
            out.append(b"#t\r\n" if value else b"#f\r\n")
        else:
            out.append(b":1\r\n" if value else b":0\r\n")
    elif t is Spliced:
        out.append(b"*%d\r\n" % value.declared)
        for item in value:
            _encode_into(item, proto, out)
    elif t is Raw:
        out.append(value.data)
    elif t is ErrorReply:
        out.append(encode_error(value))
    elif t is set or t is frozenset:
        out.append(b"%c%d\r\n" % (126 if proto == 3 else 42, len(value)))
        for item in value:
            if type(item) is bytes:  # SMEMBERS, SINTER ...
                _bulk_into(item, out)
            else:
                _encode_into(item, proto, out)
    elif value is NULL_ARRAY:
        out.append(_NULL3 if proto == 3 else b"*-1\r\n")
    elif t is Push or t is OrderedSet:
        out.append(b"%c%d\r\n" % ((62 if t is Push else 126) if proto == 3 else 42, len(value)))
        for item in value:
            _encode_into(item, proto, out)
    elif t is Verbatim:
        if proto == 3:
            payload = value.fmt.encode() + b":" + value.text
            out.append(b"=%d\r\n%b\r\n" % (len(payload), payload))
        else:
            out.append(b"$%d\r\n%b\r\n" % (len(value.text), value.text))
    elif isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        out.append(b"$%d\r\n%b\r\n" % (len(data), data))
    elif isinstance(value, int):  # numpy ints and IntEnum
        out.append(b":%d\r\n" % int(value))
    elif isinstance(value, float):
        _encode_into(float(value), proto, out)
    elif isinstance(value, str):
        _encode_into(str(value), proto, out)
    else:
        raise TypeError(f"cannot encode reply of type {t.__name__}")


def encode_error(message: str) -> bytes:
    """An error line: CR and LF at its ends dropped and inside it made blanks, as Redis's
    addReplyErrorFormat does, so no text (a script's error, a name a client sent) can end
    the line early and inject a reply of its own."""
    if "\r" in message or "\n" in message:
        message = message.strip("\r\n").replace("\r", " ").replace("\n", " ")
    return b"-%b\r\n" % message.encode("utf-8", "replace")
