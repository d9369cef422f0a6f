"""The vector-set value type and the FILTER language as plain data structures: quantization
(stored bytes per mode, exact recovery), writes through effect records, label reuse,
snapshots (Q8/BIN keep their stored vectors, restore gives identical floats), the search
with in-walk filters, and the expression language's grammar and no-match rules."""

from __future__ import annotations

from typing import Any

import msgpack
import numpy as np
import pytest

from hotkv_server.stores.keyspace import KeyValueStore
from hotkv_server.stores.keyspace_effects import KvPut
from hotkv_server.stores.vectorset import VectorSetValue, quantize, stored_bytes
from hotkv_server.stores.vectorset_effects import KvVadd, KvVrem, KvVsetattr
from hotkv_server.stores.vfilter import FilterSyntaxError, compile_filter
from hotkv_server.stores.vsearch import VectorSearch, filter_check

RNG = np.random.default_rng(4)


def filled(quant: str, n: int = 600, dim: int = 24) -> tuple[VectorSetValue, np.ndarray]:
    data = RNG.standard_normal((n, dim)).astype(np.float32)
    vset = VectorSetValue(dim, quant)
    for i, row in enumerate(data):
        vset.add(b"e%d" % i, *quantize(row, quant), b'{"i": %d}' % i)
    return vset, data


@pytest.mark.parametrize("quant", ["f32", "int8", "bin"])
def test_stored_bytes_and_exact_recovery(quant: str) -> None:
    vset, data = filled(quant, 50, 100)
    element = vset.elements[b"e7"]
    stored = quantize(data[7], quant)[0]
    assert len(stored) == stored_bytes(quant, 100) == {"f32": 400, "int8": 100, "bin": 16}[quant]
    assert vset.raw(element) == stored  # the quantized form comes back from the index floats
    assert element.l2 == pytest.approx(float(np.linalg.norm(data[7])), rel=1e-6)
    emb = np.asarray(vset.embedding(element))
    if quant == "bin":
        assert emb.tolist() == np.where(data[7] > 0, 1.0, -1.0).tolist()
    else:
        assert np.allclose(emb, data[7], atol=0.03 * float(np.abs(data[7]).max()))


def test_effects_through_the_keyspace() -> None:
    kv = KeyValueStore()
    row = np.ones(4, dtype=np.float32)
    state = VectorSetValue(4, "int8").settings()
    state["add"] = [[b"a", *quantize(row, "int8"), None]]
    kv.apply(KvPut(b"k", "vectorset", state, None))
    vset = kv.typed(b"k", 0, VectorSetValue)
    assert vset is not None and list(vset.elements) == [b"a"]
    assert kv.apply(KvVadd(b"k", b"b", *quantize(-row, "int8"), b'{"x": 1}')) == 1
    assert kv.apply(KvVadd(b"k", b"b", *quantize(row, "int8"), None)) == 0  # keeps the attrs
    assert vset.elements[b"b"].attr == b'{"x": 1}' and vset.numattribs == 1
    assert kv.apply(KvVsetattr(b"k", b"b", b"")) == 1 and vset.numattribs == 0
    assert kv.apply(KvVsetattr(b"k", b"zz", b"{}")) == 0
    assert kv.apply(KvVrem(b"k", [b"a", b"zz"])) == 1
    assert kv.apply(KvVrem(b"k", [b"b"])) == 1
    assert kv.typed(b"k", 0, VectorSetValue) is None  # empty: removed, as Redis does
    assert kv.apply(KvVrem(b"k", [b"b"])) == 0  # a missing key is a no-op


def test_labels_are_reused_and_the_index_released() -> None:
    vset, data = filled("f32", 100)
    high = vset.index_capacity()
    for _ in range(3):
        vset.remove([b"e%d" % i for i in range(50)])
        for i in range(50):
            vset.add(b"e%d" % i, *quantize(data[i], "f32"), None)
    assert vset.index_count() == 100 and vset.index_capacity() == high
    vset.remove(list(vset.elements))
    assert vset._index is None and vset.nbytes < 2000


def test_a_vsim_index_stays_while_empty() -> None:
    vset = VectorSetValue(3, "f32", metric="l2", family="vsim")
    assert len(vset) == 1 and not vset.elements
    vset.add(b"a", *quantize(np.ones(3, dtype=np.float32), "f32", "l2"), None)
    vset.remove([b"a"])
    assert len(vset) == 1


@pytest.mark.parametrize("quant", ["f32", "int8", "bin"])
def test_snapshots_restore_the_same_index(quant: str) -> None:
    vset, data = filled(quant)
    vset.remove([b"e%d" % i for i in range(0, 600, 9)])
    snap = vset.snapshot()
    size = len(msgpack.packb(snap))
    twin = VectorSetValue.restore(msgpack.unpackb(msgpack.packb(snap)))
    for name, element in list(vset.elements.items())[::37]:
        assert np.array_equal(vset.indexed(element), twin.indexed(twin.elements[name]))
    q = vset.query_vector(data[3])
    assert [(e.name, d) for e, d in VectorSearch(vset, q, 10, 100, None, False).run_in_place()] == \
        [(e.name, d) for e, d in VectorSearch(twin, q, 10, 100, None, False).run_in_place()]
    fp32 = len(msgpack.packb(filled("f32")[0].snapshot()))
    if quant != "f32":  # the stored form, not hnswlib's floats
        assert size < 0.75 * fp32
    copy = vset.copy()
    copy.remove([b"e1"])
    assert b"e1" in vset.elements


def test_search_filters_inside_the_walk_and_falls_back_to_exact() -> None:
    vset, data = filled("f32", 1000)
    q = vset.query_vector(data[0])
    check = filter_check(compile_filter(".i % 100 == 3"))
    hits = VectorSearch(vset, q, 10, 100, check, False).run_in_place()
    assert sorted(int(e.name[1:]) for e, _ in hits) == list(range(3, 1000, 100))
    truth = VectorSearch(vset, q, 5, 100, None, True).run_in_place()
    sims = (data / np.linalg.norm(data, axis=1, keepdims=True)) @ q
    assert [e.name for e, _ in truth] == [b"e%d" % i for i in np.argsort(-sims)[:5]]


@pytest.mark.parametrize("expr,attrs,expected", [
    (".a > 1 and .b == 'x'", {"a": 2, "b": "x"}, True),
    (".a > 1 && .b == \"x\"", {"a": 2, "b": "y"}, False),
    (".a > 1 || .b == 'x'", {"a": 0, "b": "x"}, True),
    ("not .a", {"a": 0}, True),
    ("!.a", {"a": "text"}, False),
    ("2 + 3 * 4 == 14", {}, True),
    ("2 ** 3 ** 2 == 512", {}, True),
    ("-2 ** 2 == -4", {}, True),
    ("(1 + 2) * 3 == 9 and 7 % 4 == 3 and 9 / 2 == 4.5", {}, True),
    (".t in ['a', 'b', 3]", {"t": "b"}, True),
    (".n in [1, 2, 3]", {"n": 3}, True),
    ("'oo' in .s", {"s": "foobar"}, True),
    ("'zz' in .s", {"s": "foobar"}, False),
    (".flag == 1", {"flag": True}, True),
    (".flag", {"flag": False}, False),
    (".x == 1", {}, False),  # missing field
    (".x == 1 or true", {}, False),  # a missing field fails the whole expression
    (".o == 1", {"o": {"nested": 1}}, False),  # objects are not values
    (".arr in [1]", {"arr": [1, {"a": 2}]}, False),
    ("1 / 0 > 1", {}, False),
    (".year-name > 3", {"year-name": 4}, True),
    ("'a\\'b' == .s", {"s": "a'b"}, True),
])
def test_filter_language(expr: str, attrs: dict[str, Any], expected: bool) -> None:
    assert compile_filter(expr)(attrs) is expected


@pytest.mark.parametrize("expr,near", [
    (".a >", ".a >"),  # ran out of input: the whole expression, as Redis
    ("(.a == 1", "(.a == 1"),
    (".a === 1", "= 1"),
    (".a == 1 )", ")"),
    ("foo == 1", "foo == 1"),
    ("[1, 2", "[1, 2"),
    ("", ""),
    (".a @ 2", "@ 2"),
])
def test_filter_syntax_errors(expr: str, near: str) -> None:
    with pytest.raises(FilterSyntaxError) as err:
        compile_filter(expr)
    assert err.value.near == near


def test_bad_or_missing_attributes_never_match() -> None:
    vset, data = filled("f32", 20)
    vset.set_attr(b"e1", b"{not json")
    vset.set_attr(b"e2", b"[1, 2]")
    vset.set_attr(b"e3", b"")
    check = filter_check(compile_filter(".i >= 0"))
    names = {e.name for e, _ in VectorSearch(vset, vset.query_vector(data[0]), 20, 100, check,
                                             False).run_in_place()}
    assert names == {b"e%d" % i for i in range(20)} - {b"e1", b"e2", b"e3"}
