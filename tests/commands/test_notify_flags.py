"""notify-keyspace-events letters: parsed to bits and written back in Redis 7.0's order."""

from __future__ import annotations

import pytest

from hotkv_server.engine.notify import key_in_channel
from hotkv_server.engine.notify_flags import (
    ALL,
    AMEM,
    KEYEVENT,
    KEYSPACE,
    NEW,
    format_flags,
    parse_flags,
)


@pytest.mark.parametrize(("text", "shown"), [
    ("KEA", "AKE"), ("Kgx", "gxK"), ("KEAmn", "AKEm"), ("Kmn", "nKm"), ("g$lshzxetd", "A"),
    ("", ""), ("a", "a"), ("KEAa", "AKEa"),
])
def test_flags_read_back(text: str, shown: str) -> None:
    assert format_flags(parse_flags(text)) == shown


def test_bits_keep_what_the_text_hides() -> None:
    flags = parse_flags("KEAn")
    assert flags & NEW and flags & ALL == ALL and flags & KEYSPACE and flags & KEYEVENT
    assert not flags & AMEM


def test_bad_letter() -> None:
    with pytest.raises(ValueError, match="Invalid event class character"):
        parse_flags("Kq")


def test_key_in_channel() -> None:
    assert key_in_channel(b"__keyspace@0__:tenant-a:k") == b"tenant-a:k"
    assert key_in_channel(b"__amem@0__:conv:tenant-b:chat") == b"tenant-b:chat"
    assert key_in_channel(b"__keyevent@0__:set") is None
    assert key_in_channel(b"__amem@0__:bogus:x") is None
    assert key_in_channel(b"news") is None
