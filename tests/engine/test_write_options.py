"""The one parser of expiry and condition options (engine/write_options.py), as plain code."""

from __future__ import annotations

import pytest

from hotkv_server.engine.args import Args
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.write_options import (
    AMEM_TTL_TOKENS,
    GETEX_TOKENS,
    KEEPTTL,
    NX,
    SET_TOKENS,
    WriteOptions,
    redis_deadline,
)

NOW = 1_000_000


def parse(tokens: frozenset[bytes], *words: bytes, redis: bool) -> WriteOptions:
    opts = WriteOptions(tokens, redis=redis)
    args = Args(list(words), 0)
    while args:
        opt = args.token()
        if not opts.take(opt, args, NOW):
            raise CommandError(f"unknown {opt!r}")
    return opts


def test_redis_dialect_keeps_the_raw_value_and_checks_it_later() -> None:
    opts = parse(SET_TOKENS, b"nx", b"get", b"ex", b"10", b"EX", b"20", redis=True)
    assert (opts.condition, opts.get, opts.expiry, opts.raw) == (NX, True, b"EX", b"20")
    assert opts.redis_deadline(NOW, "set") == NOW + 20_000
    assert parse(SET_TOKENS, b"PXAT", b"5", redis=True).redis_deadline(NOW, "set") == 5
    assert parse(SET_TOKENS, b"KEEPTTL", b"KEEPTTL", redis=True).expiry == KEEPTTL


@pytest.mark.parametrize("words", [
    (b"NX", b"XX"), (b"EX", b"1", b"PX", b"1"), (b"KEEPTTL", b"EX", b"1"), (b"EX", b"1", b"KEEPTTL"),
    (b"EX",),
])
def test_redis_dialect_conflicts_are_syntax_errors(words: tuple[bytes, ...]) -> None:
    with pytest.raises(CommandError) as exc:
        parse(SET_TOKENS, *words, redis=True)
    assert exc.value.message == "ERR syntax error"


def test_getex_persist_conflicts_with_an_expiry() -> None:
    assert parse(GETEX_TOKENS, b"PERSIST", b"persist", redis=True).expiry == b"PERSIST"
    with pytest.raises(CommandError):
        parse(GETEX_TOKENS, b"PERSIST", b"EX", b"1", redis=True)
    with pytest.raises(CommandError):
        parse(GETEX_TOKENS, b"KEEPTTL", redis=True)  # not one of GETEX's


@pytest.mark.parametrize(("raw", "option", "message"), [
    (b"abc", b"EX", "ERR value is not an integer or out of range"),
    (b"0", b"PX", "ERR invalid expire time in 'set' command"),
    (b"9223372036854775807", b"EX", "ERR invalid expire time in 'set' command"),
    (b"9223372036854775807", b"PX", "ERR invalid expire time in 'set' command"),
])
def test_redis_deadline_checks_as_redis(raw: bytes, option: bytes, message: str) -> None:
    with pytest.raises(CommandError) as exc:
        redis_deadline(raw, option, NOW, "set")
    assert exc.value.message == message


def test_hotkv_dialect_reads_values_at_once_and_names_conflicts() -> None:
    opts = parse(AMEM_TTL_TOKENS | {NX, b"XX"}, b"TTL", b"5", b"XX", redis=False)
    assert (opts.ttl_ms, opts.condition, opts.deadline(NOW)) == (5000, b"XX", NOW + 5000)
    assert parse(AMEM_TTL_TOKENS, b"PXAT", b"7", redis=False).deadline(NOW) == 7
    assert parse(AMEM_TTL_TOKENS, redis=False).deadline(NOW) is None
    with pytest.raises(CommandError) as exc:
        parse(AMEM_TTL_TOKENS, b"TTL", b"5", b"PX", b"5", redis=False)
    assert "TTL" in exc.value.message and "PX" in exc.value.message
    with pytest.raises(CommandError) as exc:
        parse(AMEM_TTL_TOKENS, b"TTL", b"0", redis=False)
    assert "TTL" in exc.value.message
