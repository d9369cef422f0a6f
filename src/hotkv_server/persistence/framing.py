"""Record framing for every persistence file: length + CRCs around one msgpack payload.

A frame is a 16-byte header followed by the payload::

    payload length  u64 little-endian
    payload crc32   u32 little-endian   (zlib.crc32 of the payload)
    header crc32    u32 little-endian   (zlib.crc32 of the 12 bytes before it)

The header has its own checksum so that a damaged length is recognised as damage: without
it, a flipped bit in a length near the end of a file would look like a record cut short
by a crash, and "repairing" it would silently drop everything after it.

Reading distinguishes two kinds of trouble, as Redis does for its AOF:

* *torn*: the file ends inside a frame (a crash while appending). Only that can be
  truncated away by ``aof-load-truncated yes``.
* *corrupt*: a complete frame whose checksums or msgpack do not hold up. That is never
  silently repaired.
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from hotkv_server.stores.effect import pack, unpack

_PREFIX = struct.Struct("<QI")
_HCRC = struct.Struct("<I")
HEADER_SIZE = _PREFIX.size + _HCRC.size  # 16

_crc32 = zlib.crc32


class FrameError(Exception):
    """A frame that cannot be read; ``offset`` is where the bad frame starts."""

    def __init__(self, reason: str, offset: int, torn: bool) -> None:
        super().__init__(f"{reason} at offset {offset}")
        self.reason = reason
        self.offset = offset
        #: True when the file merely ends inside this frame (a crash while appending)
        self.torn = torn


def header(payload: bytes) -> bytes:
    """The 16-byte header of a frame around ``payload``."""
    prefix = _PREFIX.pack(len(payload), _crc32(payload))
    return prefix + _HCRC.pack(_crc32(prefix))


def frame(payload: bytes) -> bytes:
    """The header and the payload, ready to append."""
    return header(payload) + payload


def frame_value(value: Any) -> bytes:
    return frame(pack(value))


def effect_count(record: Any) -> int | None:
    """How many effects an AOF record holds (a turn's ``["tx", [...]]`` counts each of its
    effects), or None when the record is not an effect list."""
    if not isinstance(record, list) or not record or not isinstance(record[0], str):
        return None
    return len(record[1]) if record[0] == "tx" and len(record) > 1 else 1


@dataclass
class Frame:
    offset: int  # where the frame starts
    end: int  # where the next one starts
    value: Any


def iter_frames(data: bytes | mmap.mmap, start: int = 0) -> Iterator[Frame]:
    """Decode frames from ``data`` until its end; raise FrameError at the first bad one."""
    size = len(data)
    pos = start
    prefix_unpack = _PREFIX.unpack_from
    hcrc_unpack = _HCRC.unpack_from
    while pos < size:
        if size - pos < HEADER_SIZE:
            raise FrameError("file ends inside a record header", pos, torn=True)
        length, pcrc = prefix_unpack(data, pos)
        (hcrc,) = hcrc_unpack(data, pos + _PREFIX.size)
        if _crc32(data[pos : pos + _PREFIX.size]) != hcrc:
            raise FrameError("record header checksum mismatch", pos, torn=False)
        body = pos + HEADER_SIZE
        end = body + length
        if end > size:
            raise FrameError("file ends inside a record", pos, torn=True)
        payload = data[body:end]
        if _crc32(payload) != pcrc:
            raise FrameError("record checksum mismatch", pos, torn=False)
        try:
            value = unpack(payload)
        except Exception as exc:  # msgpack raises several types for bad data
            raise FrameError(f"record is not valid msgpack ({type(exc).__name__})", pos,
                             torn=False) from None
        yield Frame(pos, end, value)
        pos = end


class MappedFile:
    """A read-only view of a whole file (mmap, or b"" for an empty one); a context manager."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fh = open(path, "rb")  # noqa: SIM115 - closed in close()
        size = os.fstat(self._fh.fileno()).st_size
        self.data: bytes | mmap.mmap
        if size:
            self.data = mmap.mmap(self._fh.fileno(), 0, access=mmap.ACCESS_READ)
        else:
            self.data = b""

    def close(self) -> None:
        if isinstance(self.data, mmap.mmap):
            self.data.close()
        self._fh.close()

    def __enter__(self) -> MappedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def scan_file(path: str) -> tuple[int, int, FrameError | None]:
    """(records, bytes of good records, first error or None): a check without applying."""
    count = 0
    good = 0
    with MappedFile(path) as mapped:
        try:
            for fr in iter_frames(mapped.data):
                count += 1
                good = fr.end
        except FrameError as exc:
            return count, good, exc
    return count, good, None
