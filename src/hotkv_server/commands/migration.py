"""Moving objects between servers: the DUMP payload format, and MIGRATE's client side.

The payload is ``b"HKV1" + msgpack({store name: state}) + CRC32`` (big-endian): every
store's part of one id (``Store.dump_id``). The format is hotkv's own: a DUMP payload moves
between hotkv servers, not to or from redis-server (whose RDB format describes other
objects). Deadlines inside the states are absolute, so a moved object keeps its expiry.

MIGRATE sends RESTORE-ASKING for each payload to the target node and reads the replies on
a blocking socket with a timeout, as Redis's MIGRATE does (the command holds the event
loop for that long, so a migration step moves a bounded batch).
"""

from __future__ import annotations

import socket
import struct
import zlib
from collections.abc import Sequence
from typing import Any

import msgpack

MAGIC = b"HKV1"
_CRC = struct.Struct(">I")


class PayloadError(ValueError):
    """Not a payload this server wrote (or a damaged one)."""


def encode(parts: dict[str, Any]) -> bytes:
    body = MAGIC + msgpack.packb(parts, use_bin_type=True)
    return body + _CRC.pack(zlib.crc32(body))


def decode(payload: bytes) -> dict[str, Any]:
    if len(payload) < len(MAGIC) + _CRC.size or not payload.startswith(MAGIC):
        raise PayloadError("not a hotkv payload")
    body, crc = payload[: -_CRC.size], payload[-_CRC.size :]
    if _CRC.unpack(crc)[0] != zlib.crc32(body):
        raise PayloadError("checksum mismatch")
    try:
        parts = msgpack.unpackb(body[len(MAGIC) :], raw=False, strict_map_key=False)
    except (ValueError, msgpack.UnpackException) as exc:
        raise PayloadError(str(exc)) from None
    if not isinstance(parts, dict) or not all(isinstance(k, str) for k in parts):
        raise PayloadError("not a map of store states")
    return parts


class MigrateError(Exception):
    """The reply text MIGRATE gives for this failure (one line)."""


def _encode(*args: bytes) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        out.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    return b"".join(out)


def send_payloads(host: str, port: int, timeout_ms: int, auth: Sequence[bytes],
                  items: Sequence[tuple[bytes, bytes]], replace: bool) -> None:
    """RESTORE-ASKING every ``(key, payload)`` on ``host:port``; raise MigrateError on the
    first failure (nothing is deleted locally then)."""
    timeout = max(timeout_ms, 1) / 1000
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError:
        # as Redis, whose non-blocking connect fails at the first write
        raise MigrateError("IOERR error or timeout writing to target instance") from None
    try:
        sock.settimeout(timeout)
        requests = []
        if auth:
            requests.append(_encode(b"AUTH", *auth))
        for key, payload in items:
            args = [b"RESTORE-ASKING", key, b"0", payload]
            if replace:
                args.append(b"REPLACE")
            requests.append(_encode(*args))
        try:
            sock.sendall(b"".join(requests))
        except OSError:
            raise MigrateError("IOERR error or timeout writing to target instance") from None
        reader = sock.makefile("rb")
        for _ in requests:
            try:
                line = reader.readline()
            except OSError:
                line = b""
            if not line:
                raise MigrateError("IOERR error or timeout reading to target instance")
            if line.startswith(b"-"):
                text = line[1:].rstrip(b"\r\n").decode("utf-8", "replace")
                raise MigrateError(f"ERR Target instance replied with error: {text}")
    finally:
        sock.close()
