"""The sealed walk cursors (engine/cursor.py) as a plain codec."""

from __future__ import annotations

import base64

from hotkv_server.engine.cursor import CursorCodec

SCOPE = b"SUMMARY\0tenant-b"


def test_a_cursor_opens_to_its_position_and_shows_nothing_of_it() -> None:
    codec = CursorCodec(b"k" * 32)
    for position in (b"tenant-b:agent1", b"\x00", b"\xff" * 512, b"a b"):
        cursor = codec.seal(SCOPE, position)
        assert codec.open(SCOPE, cursor) == position
        raw = base64.urlsafe_b64decode(cursor + b"=" * (-len(cursor) % 4))
        assert position not in raw and position.hex().encode() not in cursor
        assert codec.seal(SCOPE, position) == cursor  # one position, one cursor


def test_a_cursor_of_another_scope_key_or_spelling_is_refused() -> None:
    codec = CursorCodec(b"k" * 32)
    cursor = codec.seal(SCOPE, b"tenant-b:agent1")
    assert codec.open(b"SUMMARY\0tenant-a", cursor) is None  # another user
    assert codec.open(b"CONV\0tenant-b", cursor) is None  # another store
    assert CursorCodec(b"j" * 32).open(SCOPE, cursor) is None  # another server process
    assert CursorCodec().open(SCOPE, cursor) is None
    for i in range(len(cursor)):  # every single changed character
        for replacement in b"AQ_-":
            changed = cursor[:i] + bytes([replacement]) + cursor[i + 1:]
            if changed != cursor:
                assert codec.open(SCOPE, changed) is None
    for bad in (b"", b"0", b"=", cursor + b"=", cursor[:-1], cursor + b"A", b"*" * 30,
                b"tenant-b:agent1".hex().encode(), b"A" * 10_000):
        assert codec.open(SCOPE, bad) is None


def test_scope_and_position_cannot_run_together() -> None:
    codec = CursorCodec(b"k" * 32)
    cursor = codec.seal(b"ab", b"c")
    assert codec.open(b"a", cursor) is None and codec.open(b"abc", cursor) is None
