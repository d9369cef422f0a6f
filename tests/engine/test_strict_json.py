"""Strict JSON for META (engine/strict_json.py) as plain functions."""

from __future__ import annotations

import pytest

from hotkv_server.engine.strict_json import MAX_DEPTH, JSONRejected, load_object, nesting_depth


def test_depth_counts_brackets_outside_strings() -> None:
    assert nesting_depth(b'{"a": [1, {"b": []}]}') == 4
    assert nesting_depth(b'{"a": "[[[[{{{{"}') == 1
    assert nesting_depth(b'{"a": "\\"[[[", "b": "\\\\", "c": [1]}') == 2
    assert nesting_depth(b"") == 0


def test_objects_nested_up_to_the_limit_load_deeper_ones_are_refused() -> None:
    ok = b'{"a":' * MAX_DEPTH + b"1" + b"}" * MAX_DEPTH
    assert isinstance(load_object(ok), dict)
    for deep in (MAX_DEPTH + 1, 1000, 100_000):
        raw = b'{"a":' * deep + b"1" + b"}" * deep
        with pytest.raises(JSONRejected, match=f"nested at most {MAX_DEPTH} levels deep"):
            load_object(raw)
    with pytest.raises(JSONRejected, match="nested at most"):
        load_object(b"[" * 5000)  # broken and deep: the depth is what is said
    # many brackets side by side are not deep
    assert load_object(b'{"a": [' + b"[1]," * 1000 + b"[2]]}")["a"][-1] == [2]


@pytest.mark.parametrize("raw", [b'{"a": NaN}', b'{"a": Infinity}', b'{"a": -Infinity}',
                                 b'{"a": [1, {"b": NaN}]}', b'{"a": 1e999}', b'{"a": -1e400}'])
def test_nan_and_infinity_are_not_json(raw: bytes) -> None:
    with pytest.raises(JSONRejected) as info:
        load_object(raw)
    assert "JSON object" in info.value.reason


@pytest.mark.parametrize("raw", [b"[]", b"1", b'"s"', b"null", b"{", b"\xff", b""])
def test_anything_but_an_object_is_refused(raw: bytes) -> None:
    with pytest.raises(JSONRejected, match=r"^a JSON object$"):
        load_object(raw)
