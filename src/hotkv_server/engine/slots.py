"""Hash slots of the Redis Cluster protocol: which of the 16384 slots a key belongs to.

A key's slot is CRC16 (the XMODEM variant, ``binascii.crc_hqx`` with a zero seed) of the key
modulo 16384; when the key holds ``{...}`` with at least one byte between the first ``{`` and
the next ``}``, only those bytes are hashed (a *hash tag*), so ``{tenant-a}:session-42`` and
``{tenant-a}:kb`` share a slot and one node.
"""

from __future__ import annotations

from binascii import crc_hqx

SLOTS = 16384


def hash_part(key: bytes) -> bytes:
    """The bytes of ``key`` that decide its slot (the hash tag's contents when it has one)."""
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            return key[start + 1 : end]
    return key


def key_slot(key: bytes) -> int:
    return crc_hqx(hash_part(key), 0) & (SLOTS - 1)


def ranges(slots: list[int]) -> list[tuple[int, int]]:
    """Sorted slot numbers as inclusive ``(first, last)`` runs."""
    out: list[tuple[int, int]] = []
    for slot in sorted(set(slots)):
        if out and out[-1][1] == slot - 1:
            out[-1] = (out[-1][0], slot)
        else:
            out.append((slot, slot))
    return out
