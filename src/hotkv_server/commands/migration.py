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
import time
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


#: open connections to migration targets, reused for this long as Redis's MIGRATE does (a
#: reshard sends one MIGRATE per slot); touched only by the event-loop thread
CACHE_SECONDS = 10.0
_cache: dict[tuple[str, int, tuple[bytes, ...]], tuple[socket.socket, object, float]] = {}


def _connection(host: str, port: int, auth: Sequence[bytes], timeout: float) -> tuple[socket.socket, object]:
    now = time.monotonic()
    for key, (sock, _reader, used) in list(_cache.items()):
        if now - used > CACHE_SECONDS:
            del _cache[key]
            sock.close()
    key = (host, port, tuple(auth))
    found = _cache.get(key)
    if found is not None:
        found[0].settimeout(timeout)
        return found[0], found[1]
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError:
        # as Redis, whose non-blocking connect fails at the first write
        raise MigrateError("IOERR error or timeout writing to target instance") from None
    reader = sock.makefile("rb")
    if auth:
        try:
            sock.sendall(_encode(b"AUTH", *auth))
            line = reader.readline()
        except OSError:
            line = b""
        if not line.startswith(b"+"):
            sock.close()
            text = line[1:].rstrip(b"\r\n").decode("utf-8", "replace") or "no reply"
            raise MigrateError(f"ERR Target instance replied with error: {text}")
    _cache[key] = (sock, reader, now)
    return sock, reader


def send_payloads(host: str, port: int, timeout_ms: int, auth: Sequence[bytes],
                  items: Sequence[tuple[bytes, bytes]], replace: bool) -> None:
    """RESTORE-ASKING every ``(key, payload)`` on ``host:port``; raise MigrateError on the
    first failure (nothing is deleted locally then)."""
    timeout = max(timeout_ms, 1) / 1000
    key = (host, port, tuple(auth))
    sock, reader = _connection(host, port, auth, timeout)
    requests = []
    for ident, payload in items:
        args = [b"RESTORE-ASKING", ident, b"0", payload]
        if replace:
            args.append(b"REPLACE")
        requests.append(_encode(*args))
    try:
        try:
            sock.sendall(b"".join(requests))
        except OSError:
            raise MigrateError("IOERR error or timeout writing to target instance") from None
        for _ in requests:
            try:
                line = reader.readline()  # type: ignore[attr-defined]
            except OSError:
                line = b""
            if not line:
                raise MigrateError("IOERR error or timeout reading to target instance")
            if line.startswith(b"-"):
                text = line[1:].rstrip(b"\r\n").decode("utf-8", "replace")
                raise MigrateError(f"ERR Target instance replied with error: {text}")
    except MigrateError:
        _cache.pop(key, None)  # the replies may be out of step now: never reuse it
        sock.close()
        raise
    _cache[key] = (sock, reader, time.monotonic())
