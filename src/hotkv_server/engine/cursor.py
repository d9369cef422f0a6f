"""Opaque walk cursors (AMEM.SCAN): the position of a walk, sealed so a client can neither
read it nor make one up.

A walk that resumes after the last id it looked at needs no state on the server, but a
cursor that simply spells that id would show it to a client that may not see it, and a
cursor a client writes itself could start a walk anywhere. So a cursor is the id
encrypted and authenticated with a key this process draws at start, bound to a *scope*
(which store, which user): a cursor is accepted only by the same process, for the same
store and the same user, and only if it was issued, never edited.

The construction is a deterministic SIV from the standard library: ``iv = HMAC-SHA256
(mac_key, scope || id)[:16]``, ``body = id XOR SHAKE-256(enc_key || iv)``, and the cursor is
``base64url(iv || body)``. Decoding recomputes the keystream from the iv, recovers the id
and checks the iv against it, so any changed byte is refused. The same position gives the
same cursor (a repeated call answers the same bytes); the length of the id shows, which is
harmless since a walk only ever hands out positions of ids the caller may read.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os

_IV_BYTES = 16
#: ids are at most 512 bytes; anything much longer is not a cursor of ours
_MAX_CURSOR_CHARS = 4 * (_IV_BYTES + 1024) // 3 + 4


class CursorCodec:
    """Seals and opens walk positions with one process-wide secret (or a given one)."""

    __slots__ = ("_enc_key", "_mac_key")

    def __init__(self, secret: bytes | None = None) -> None:
        secret = os.urandom(32) if secret is None else secret
        self._mac_key = hashlib.sha256(b"hotkv cursor mac\0" + secret).digest()
        self._enc_key = hashlib.sha256(b"hotkv cursor enc\0" + secret).digest()

    def _iv(self, scope: bytes, position: bytes) -> bytes:
        # the scope's length goes first, so (scope, position) pairs cannot run together
        material = len(scope).to_bytes(4, "big") + scope + position
        return hmac.new(self._mac_key, material, hashlib.sha256).digest()[:_IV_BYTES]

    def _stream(self, iv: bytes, n: int) -> bytes:
        return hashlib.shake_256(self._enc_key + iv).digest(n) if n else b""

    def seal(self, scope: bytes, position: bytes) -> bytes:
        """The cursor that resumes a walk of ``scope`` after ``position``."""
        iv = self._iv(scope, position)
        body = bytes(a ^ b for a, b in zip(position, self._stream(iv, len(position)), strict=True))
        return base64.urlsafe_b64encode(iv + body).rstrip(b"=")

    def open(self, scope: bytes, cursor: bytes) -> bytes | None:
        """The position a cursor of ``scope`` resumes after; None if it was not issued by
        this process for this scope (forged, edited, another user's or store's)."""
        if len(cursor) > _MAX_CURSOR_CHARS or b"=" in cursor:
            return None
        try:
            raw = base64.urlsafe_b64decode(cursor + b"=" * (-len(cursor) % 4))
        except (binascii.Error, ValueError):
            return None
        if len(raw) < _IV_BYTES:
            return None
        iv, body = raw[:_IV_BYTES], raw[_IV_BYTES:]
        position = bytes(a ^ b for a, b in zip(body, self._stream(iv, len(body)), strict=True))
        if not hmac.compare_digest(iv, self._iv(scope, position)):
            return None
        # one spelling per cursor: a re-encoded variant (other padding bits) is refused too
        if self.seal(scope, position) != cursor:
            return None
        return position


#: the codec of this server process: cursors do not survive a restart
PROCESS_CODEC = CursorCodec()
