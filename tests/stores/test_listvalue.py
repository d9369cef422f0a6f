"""ListValue as a plain data structure, checked against a Python list model of Redis's rules."""

from __future__ import annotations

import random

import pytest

from hotkv_server.stores.listvalue import ListValue


def redis_range(model: list[bytes], start: int, stop: int) -> list[bytes]:
    """LRANGE as Redis documents it, written independently of ListValue._clamp."""
    n = len(model)
    if start < 0:
        start = n + start
    if stop < 0:
        stop = n + stop
    start = max(start, 0)
    if start > stop or start >= n:
        return []
    return model[start : min(stop, n - 1) + 1]


def test_push_order_matches_redis() -> None:
    lst = ListValue()
    assert lst.push([b"a", b"b", b"c"], True) == 3
    assert list(lst) == [b"c", b"b", b"a"]
    assert lst.push([b"x", b"y"], False) == 5
    assert list(lst) == [b"c", b"b", b"a", b"x", b"y"]
    assert lst.payload_bytes() == 5


def test_pops_take_from_the_ends_and_stop_at_empty() -> None:
    lst = ListValue([b"1", b"2", b"3"])
    assert lst.pop(2, True) == [b"1", b"2"]
    assert lst.pop(5, False) == [b"3"]
    assert lst.pop(1, True) == []
    assert len(lst) == 0 and lst.payload_bytes() == 0


@pytest.mark.parametrize("seed", range(5))
def test_range_index_and_trim_agree_with_the_model(seed: int) -> None:
    rnd = random.Random(seed)
    model = [b"v%d" % i for i in range(rnd.randint(0, 300))]
    lst = ListValue(model)
    for _ in range(300):
        a, b = rnd.randint(-350, 350), rnd.randint(-350, 350)
        assert lst.range(a, b) == redis_range(model, a, b), (a, b)
        i = rnd.randint(-350, 350)
        expected = model[i] if -len(model) <= i < len(model) else None
        assert lst.index(i) == expected
    a, b = rnd.randint(-50, 50), rnd.randint(-50, 350)
    kept = redis_range(model, a, b)
    lst.trim(a, b)
    assert list(lst) == kept
    assert lst.payload_bytes() == sum(map(len, kept))


def test_trim_keeping_most_of_a_long_list() -> None:
    model = [b"%d" % i for i in range(1000)]
    lst = ListValue(model)
    lst.trim(1, -2)
    assert list(lst) == model[1:-1]
    assert lst.payload_bytes() == sum(map(len, model[1:-1]))


def test_set_insert_and_remove() -> None:
    lst = ListValue([b"a", b"b", b"a", b"c", b"a"])
    assert lst.set(-1, b"zz") is True
    assert lst.set(5, b"no") is False
    assert list(lst) == [b"a", b"b", b"a", b"c", b"zz"]
    assert lst.insert(b"c", b"before-c", before=True) == 6
    assert lst.insert(b"a", b"after-a", before=False) == 7
    assert lst.insert(b"missing", b"x", before=True) == -1
    assert list(lst) == [b"a", b"after-a", b"b", b"a", b"before-c", b"c", b"zz"]
    assert lst.remove(-1, b"a") == 1
    assert list(lst) == [b"a", b"after-a", b"b", b"before-c", b"c", b"zz"]
    lst.push([b"a", b"a"], False)
    assert lst.remove(0, b"a") == 3
    assert b"a" not in list(lst)
    assert lst.remove(2, b"nothing") == 0
    assert lst.payload_bytes() == sum(map(len, lst))


def test_positions_with_rank_count_and_maxlen() -> None:
    lst = ListValue([b"a", b"b", b"c", b"1", b"2", b"3", b"c", b"c"])
    assert lst.positions(b"c", 1, None, 0) == [2]
    assert lst.positions(b"c", 2, None, 0) == [6]
    assert lst.positions(b"c", -1, None, 0) == [7]
    assert lst.positions(b"c", -2, None, 0) == [6]
    assert lst.positions(b"c", 1, 0, 0) == [2, 6, 7]
    assert lst.positions(b"c", -1, 2, 0) == [7, 6]
    assert lst.positions(b"c", 1, 0, 3) == [2]
    assert lst.positions(b"c", 1, 0, 2) == []
    assert lst.positions(b"x", 1, None, 0) == []


def test_memory_grows_with_the_payload() -> None:
    small = ListValue([b"x"])
    big = ListValue([b"x" * 1000])
    assert big.nbytes - small.nbytes == 999
