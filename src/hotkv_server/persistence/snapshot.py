"""The base snapshot file: ``Database.snapshot()`` written as a sequence of frames.

Frames (each a msgpack value in the framing of framing.py)::

    ["hotkv-base", 1, created_ms, [store names]]     header
    ["chunk", store, [item, ...]]                     part of a store whose snapshot is a list
    ["entry", store, key, value]                      one item of a store whose snapshot is a dict
    ["store", store, value]                           a store whose snapshot is anything else
    ["end", frames written before this one]           trailer: a base without it is damaged

Splitting list snapshots into chunks of a few MB (and dict snapshots into one frame per
key: a semantic namespace with its index is one) keeps the memory needed to write and to
read a base close to the size of one chunk, and lets loading yield to the event loop
between chunks (clients get ``-LOADING`` instead of silence). Whatever a store returns
from ``snapshot()`` (the semantic store includes its HNSW index in hnswlib's own
serialisation) is stored as it is and handed back to ``restore()``.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from typing import Any, BinaryIO

from hotkv_server.persistence.framing import FrameError, frame, header, iter_frames, pack

FORMAT = "hotkv-base"
VERSION = 1
#: a chunk is closed once its items take this many bytes of msgpack
CHUNK_BYTES = 4 * 1024 * 1024


class BaseFormatError(Exception):
    """A base file that does not follow the format (not a torn tail: bases are renamed whole)."""

    def __init__(self, reason: str, offset: int) -> None:
        super().__init__(f"{reason} at offset {offset}")
        self.reason = reason
        self.offset = offset


def _array_header(n: int) -> bytes:
    if n < 16:
        return bytes([0x90 | n])
    if n < 0x10000:
        return b"\xdc" + struct.pack(">H", n)
    return b"\xdd" + struct.pack(">I", n)


def encode_base(state: dict[str, Any], created_ms: int) -> Iterator[bytes]:
    """The bytes of a base file for ``state`` (``Database.snapshot()``), piece by piece."""
    names = list(state)
    yield frame(pack([FORMAT, VERSION, created_ms, names]))
    count = 1
    chunk_tag = pack("chunk")
    for name in names:
        value = state[name]
        if isinstance(value, dict) and value:
            for key, item in value.items():
                payload = pack(["entry", name, key, item])
                # header and payload apart: no copy of a payload that may be hundreds of MB
                yield header(payload)
                yield payload
                count += 1
            continue
        if not isinstance(value, list):
            yield frame(pack(["store", name, value]))
            count += 1
            continue
        head = b"\x93" + chunk_tag + pack(name)
        parts: list[bytes] = []
        size = 0
        emitted = False
        for item in value:
            packed = pack(item)
            parts.append(packed)
            size += len(packed)
            if size >= CHUNK_BYTES:
                yield frame(head + _array_header(len(parts)) + b"".join(parts))
                count += 1
                emitted = True
                parts = []
                size = 0
        if parts or not emitted:
            yield frame(head + _array_header(len(parts)) + b"".join(parts))
            count += 1
    yield frame(pack(["end", count]))


def write_base(out: BinaryIO, state: dict[str, Any], created_ms: int) -> int:
    """Write a whole base to ``out``; return the bytes written (the caller fsyncs)."""
    total = 0
    for piece in encode_base(state, created_ms):
        out.write(piece)
        total += len(piece)
    return total


def write_base_file(path: str, state: dict[str, Any], created_ms: int) -> int:
    """Write a whole base to a new file ``path`` and fsync it; return its size.

    The caller renames it into place (and removes it on failure).
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    with os.fdopen(fd, "wb", buffering=1 << 20) as out:
        size = write_base(out, state, created_ms)
        out.flush()
        os.fsync(out.fileno())
    return size


def decode_base(data: Any, state: dict[str, Any]) -> Iterator[int]:
    """Fill ``state`` from a base's bytes; yields the offset reached after each frame.

    Raises BaseFormatError (with the offset) on any damage, torn or not.
    """
    frames = iter_frames(data)
    pos = 0
    try:
        first = next(frames, None)
        if first is None:
            raise BaseFormatError("empty base file", 0)
        header = first.value
        if not (isinstance(header, list) and len(header) == 4 and header[0] == FORMAT):
            raise BaseFormatError("not a hotkv base file", 0)
        if header[1] != VERSION:
            raise BaseFormatError(f"base format version {header[1]} is not supported", 0)
        count = 1
        pos = first.end
        yield pos
        for fr in frames:
            value = fr.value
            pos = fr.offset
            if not isinstance(value, list) or not value:
                raise BaseFormatError("unexpected frame in base file", fr.offset)
            tag = value[0]
            if tag == "chunk" and len(value) == 3:
                existing = state.setdefault(value[1], [])
                if not isinstance(existing, list):
                    raise BaseFormatError(f"store '{value[1]}' appears twice", fr.offset)
                existing.extend(value[2])
            elif tag == "entry" and len(value) == 4:
                existing = state.setdefault(value[1], {})
                if not isinstance(existing, dict) or value[2] in existing:
                    raise BaseFormatError(f"store '{value[1]}' has key {value[2]!r} twice", fr.offset)
                existing[value[2]] = value[3]
            elif tag == "store" and len(value) == 3:
                if value[1] in state:
                    raise BaseFormatError(f"store '{value[1]}' appears twice", fr.offset)
                state[value[1]] = value[2]
            elif tag == "end" and len(value) == 2:
                if value[1] != count:
                    raise BaseFormatError(
                        f"base trailer counts {value[1]} frames, found {count}", fr.offset
                    )
                if fr.end != len(data):
                    raise BaseFormatError("data after the base trailer", fr.end)
                yield fr.end
                return
            else:
                raise BaseFormatError("unexpected frame in base file", fr.offset)
            count += 1
            pos = fr.end
            yield pos
    except FrameError as exc:
        raise BaseFormatError(exc.reason, exc.offset) from None
    raise BaseFormatError("base file ends without its trailer", pos)
