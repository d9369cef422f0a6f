"""Glob matching with Redis's rules: fixed cases, a differential run against a real
redis-server's KEYS, and MATCH through AMEM.SCAN on a real hotkv-server."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import RedisServer
from hotkv_server.commands.glob import glob_match

CASES = [
    # pattern, subject, expected
    (b"*", b"", True),
    (b"*", b"anything", True),
    (b"", b"", True),
    (b"", b"a", False),
    (b"abc", b"abc", True),
    (b"abc", b"abcd", False),
    (b"a*", b"a", True),
    (b"a*", b"abc", True),
    (b"a*", b"ba", False),
    (b"*c", b"abc", True),
    (b"a*c", b"ac", True),
    (b"a*c", b"abxc", True),
    (b"a*c", b"abxcd", False),
    (b"a**c", b"abc", True),
    (b"*a*b*", b"xxaxxbxx", True),
    (b"*a*b*", b"xxbxxaxx", False),
    (b"h?llo", b"hello", True),
    (b"h?llo", b"hllo", False),
    (b"h?llo", b"heello", False),
    (b"h[ae]llo", b"hallo", True),
    (b"h[ae]llo", b"hillo", False),
    (b"h[^e]llo", b"hallo", True),
    (b"h[^e]llo", b"hello", False),
    (b"h[a-b]llo", b"hbllo", True),
    (b"h[a-b]llo", b"hcllo", False),
    (b"h[b-a]llo", b"hallo", True),  # a backwards range is the same range
    (b"[\\]]", b"]", True),  # escaped ] inside a class
    (b"[\\-]", b"-", True),
    (b"[a-]", b"]", True),  # "a-]" is the range a..] and the class runs on to the end
    (b"[a-]", b"-", False),
    (b"[]a]", b"a", False),  # "[]" is an empty class: matches nothing, then "a]"
    (b"[]a]", b"]", False),
    (b"[^]", b"x", True),  # a negated empty class matches any one byte
    (b"[^]", b"", False),
    (b"[abc", b"b", True),  # a class left open ends with the pattern
    (b"[abc", b"bc", False),
    (b"[", b"[", False),
    (b"[^", b"z", True),
    (b"\\*", b"*", True),
    (b"\\*", b"a", False),
    (b"\\?", b"?", True),
    (b"a\\", b"a\\", True),  # a lone backslash at the end is itself
    (b"\\a", b"a", True),
    (b"*\\**", b"x*y", True),
    (b"*\\**", b"xy", False),
    (b"user:[0-9]*", b"user:42", True),
    (b"user:[0-9]*", b"user:x", False),
    (b"\x00*\xff", b"\x00abc\xff", True),  # binary-safe
    (b"[\x80-\xff]", b"\xc3", True),
    (b"tenant-a:*", b"tenant-a:session-42", True),
    (b"tenant-a:*", b"tenant-a:", True),
    (b"a\\*b*", b"a*bcd", True),  # an escaped star inside a literal prefix
    (b"a\\*b*", b"axbcd", False),
    (b"ab?*", b"ab", False),
    (b"tenant-a:*", b"tenant-b:session-42", False),
]


@pytest.mark.parametrize(("pattern", "subject", "expected"), CASES)
def test_glob_cases(pattern: bytes, subject: bytes, expected: bool) -> None:
    assert glob_match(pattern, subject) is expected


def test_many_stars_stay_fast() -> None:
    # a backtracking matcher takes exponential time here; this one is O(len * len)
    started = time.perf_counter()
    assert not glob_match(b"a*" * 30 + b"b", b"a" * 200)
    assert glob_match(b"*a" * 30, b"a" * 200)
    assert time.perf_counter() - started < 2.0


# --- differential: the same verdicts as redis-server's own stringmatchlen ---------------

@pytest.fixture(scope="module")
def real_redis(reference: RedisServer) -> Iterator[redis.Redis]:
    client = redis.Redis(host="127.0.0.1", port=reference.port)
    try:
        yield client
    finally:
        client.close()


_pattern = st.lists(
    st.sampled_from([b"a", b"b", b"c", b"*", b"?", b"[", b"]", b"^", b"-", b"\\"]), max_size=8
).map(b"".join)
# subjects avoid bytes >= 0x80: Redis compares class ranges as signed chars there
_subject = st.lists(st.sampled_from([b"a", b"b", b"c", b"]", b"-", b"^", b"\\", b"*"]),
                    max_size=6).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(pattern=_pattern, subjects=st.lists(_subject, min_size=1, max_size=8, unique=True))
def test_glob_agrees_with_redis_keys(
    real_redis: redis.Redis, pattern: bytes, subjects: list[bytes]
) -> None:
    subjects = [s for s in subjects if s]  # Redis keys cannot be empty
    if not subjects:
        return
    real_redis.flushall()
    real_redis.mset({s: b"1" for s in subjects})
    expected = set(real_redis.keys(pattern))
    assert {s for s in subjects if glob_match(pattern, s)} == expected, pattern


# --- end to end: MATCH in AMEM.SCAN ------------------------------------------------------

def test_scan_match_uses_redis_globs(r: redis.Redis) -> None:
    agents = [b"tenant-a:bot1", b"tenant-a:bot2", b"tenant-b:bot1", b"h*llo", b"hello"]
    for agent in agents:
        r.execute_command("AMEM.SUMMARY.SET", agent, b"s")

    def match(pattern: bytes) -> list[bytes]:
        cursor, ids = r.execute_command("AMEM.SCAN", 0, "TYPE", "summary", "MATCH", pattern,
                                        "COUNT", 100)
        assert cursor == b"0"
        return list(ids)

    assert match(b"tenant-a:*") == [b"tenant-a:bot1", b"tenant-a:bot2"]
    assert match(b"tenant-?:bot1") == [b"tenant-a:bot1", b"tenant-b:bot1"]
    assert match(b"tenant-[^a]:*") == [b"tenant-b:bot1"]
    assert match(b"h\\*llo") == [b"h*llo"]
    assert match(b"h*llo") == [b"h*llo", b"hello"]
    assert match(b"*") == sorted(agents)
    assert match(b"nothing*") == []
