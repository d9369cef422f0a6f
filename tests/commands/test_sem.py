"""AMEM.SEM.* end to end against a real hotkv-server, in RESP2 and RESP3."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
import redis

from helpers import as_float, record, records


def cmd(r: redis.Redis, *args: Any) -> Any:
    return r.execute_command(*args)


def error(r: redis.Redis, *args: Any) -> str:
    """The error text of a call (redis-py drops a leading ``ERR ``, keeps other codes)."""
    with pytest.raises(redis.ResponseError) as info:
        r.execute_command(*args)
    assert r.ping()  # an error never closes the connection
    return str(info.value)


def fp32(values: Any) -> bytes:
    return np.asarray(values, dtype="<f4").tobytes()


def hit_ids(reply: Any) -> list[bytes]:
    return [rec[b"id"] for rec in records(reply)]


def info(r: redis.Redis, ns: str) -> dict[Any, Any]:
    return record(cmd(r, "AMEM.SEM.INFO", ns))


# --- the contract example ------------------------------------------------------------------


def test_contract_example(r: redis.Redis) -> None:
    assert cmd(r, "AMEM.SEM.CREATE", "support-kb", 3) in (b"OK", True)
    assert cmd(r, "AMEM.SEM.STORE", "support-kb", "vat-policy",
               "VAT details can be corrected within 30 days.", 0.1, 0.2, 0.3) in (b"OK", "OK")
    before = int(time.time() * 1000)
    hits = records(cmd(r, "AMEM.SEM.RECALL", "support-kb", 3, 0.1, 0.2, 0.3))
    assert len(hits) == 1
    hit = hits[0]
    assert list(hit) == [b"id", b"text", b"similarity", b"kind", b"confidence", b"created",
                         b"updated"]
    assert hit[b"id"] == b"vat-policy"
    assert hit[b"text"] == b"VAT details can be corrected within 30 days."
    assert as_float(hit[b"similarity"]) == pytest.approx(1.0, abs=1e-6)
    assert hit[b"kind"] == b"fact"
    assert as_float(hit[b"confidence"]) == 1.0
    assert hit[b"created"] == hit[b"updated"]
    assert before - 60_000 <= hit[b"created"] <= before + 1000


def test_doubles_are_resp3_doubles_and_resp2_bulk_strings(r: redis.Redis) -> None:
    cmd(r, "AMEM.SEM.CREATE", "kb", 2)
    cmd(r, "AMEM.SEM.STORE", "kb", "a", "t", 1, 0, "CONFIDENCE", 0.25)
    hit = record(cmd(r, "AMEM.SEM.RECALL", "kb", 1, 1, 1)[0])
    proto = r.connection_pool.connection_kwargs.get("protocol", 2)
    if proto == 3:
        assert isinstance(hit[b"similarity"], float) and isinstance(hit[b"confidence"], float)
    else:
        assert isinstance(hit[b"similarity"], bytes) and hit[b"confidence"] == b"0.25"
    assert as_float(hit[b"similarity"]) == pytest.approx(2 ** -0.5, abs=1e-6)


# --- CREATE --------------------------------------------------------------------------------


def test_create_defaults_and_options(r: redis.Redis) -> None:
    cmd(r, "AMEM.SEM.CREATE", "kb", 768)
    assert info(r, "kb") == {b"dim": 768, b"metric": b"COSINE", b"count": 0, b"capacity": 0,
                             b"evict": b"LOWCONF", b"m": 16, b"ef_construction": 200,
                             b"ef": 64}
    assert list(info(r, "kb")) == [b"dim", b"metric", b"count", b"capacity", b"evict", b"m",
                                   b"ef_construction", b"ef"]
    cmd(r, "amem.sem.create", "kb2", 4, "metric", "l2", "m", 8, "ef_construction", 50,
        "ef", 10, "capacity", 5, "evict", "oldest")
    assert info(r, "kb2") == {b"dim": 4, b"metric": b"L2", b"count": 0, b"capacity": 5,
                              b"evict": b"OLDEST", b"m": 8, b"ef_construction": 50, b"ef": 10}
    cmd(r, "AMEM.SEM.CREATE", "kb3", 4, "CAPACITY", 5)
    assert info(r, "kb3")[b"evict"] == b"LOWCONF"
    cmd(r, "AMEM.SEM.CREATE", "kb4", 4, "METRIC", "IP", "CAPACITY", 5, "EVICT", "NONE")
    assert (info(r, "kb4")[b"metric"], info(r, "kb4")[b"evict"]) == (b"IP", b"NONE")
    assert cmd(r, "AMEM.SEM.INFO", "missing") is None


def test_create_existing_is_exists_and_update_changes_settings(r: redis.Redis) -> None:
    cmd(r, "AMEM.SEM.CREATE", "kb", 3)
    assert error(r, "AMEM.SEM.CREATE", "kb", 3).startswith(
        "EXISTS semantic namespace 'kb' already exists")
    cmd(r, "AMEM.SEM.CREATE", "kb", 3, "EF", 100, "CAPACITY", 10, "EVICT", "NONE", "UPDATE")
    got = info(r, "kb")
    assert (got[b"ef"], got[b"capacity"], got[b"evict"]) == (100, 10, b"NONE")
    cmd(r, "AMEM.SEM.CREATE", "kb", 3, "METRIC", "COSINE", "M", 16, "UPDATE")  # same: fine
    cmd(r, "AMEM.SEM.CREATE", "kb", 3, "CAPACITY", 0, "UPDATE")
    assert info(r, "kb")[b"capacity"] == 0
    assert "dim 3, which never changes" in error(r, "AMEM.SEM.CREATE", "kb", 4, "UPDATE")
    assert "METRIC COSINE" in error(r, "AMEM.SEM.CREATE", "kb", 3, "METRIC", "L2", "UPDATE")
    assert "M 16" in error(r, "AMEM.SEM.CREATE", "kb", 3, "M", 8, "UPDATE")
    assert "EF_CONSTRUCTION 200" in error(r, "AMEM.SEM.CREATE", "kb", 3, "EF_CONSTRUCTION",
                                          100, "UPDATE")
    assert error(r, "AMEM.SEM.CREATE", "nope", 3, "UPDATE").startswith(
        "NOTFOUND no semantic namespace 'nope'")


def test_update_lowering_capacity_evicts_at_once(r: redis.Redis) -> None:
    cmd(r, "AMEM.SEM.CREATE", "kb", 2)
    for i, conf in enumerate([0.5, 0.1, 0.9, 0.1]):
        cmd(r, "AMEM.SEM.STORE", "kb", f"f{i}", "t", 1, i, "CONFIDENCE", conf)
    cmd(r, "AMEM.SEM.CREATE", "kb", 2, "CAPACITY", 2, "UPDATE")  # LOWCONF: f1, f3 go
    assert hit_ids(cmd(r, "AMEM.SEM.LIST", "kb", "CURSOR", 0)[1]) == [b"f0", b"f2"]
    cmd(r, "AMEM.SEM.CREATE", "kb", 2, "CAPACITY", 1, "EVICT", "OLDEST", "UPDATE")
    assert hit_ids(cmd(r, "AMEM.SEM.LIST", "kb", "CURSOR", 0)[1]) == [b"f2"]
    assert info(r, "kb")[b"count"] == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("kb", 0), "invalid dim '0': expected an integer 1..4096"),
        (("kb", 4097), "invalid dim '4097': expected an integer 1..4096"),
        (("kb", "x"), "invalid dim 'x'"),
        (("kb", 3, "METRIC", "HAMMING"), "invalid METRIC 'HAMMING': expected one of COSINE|IP|L2"),
        (("kb", 3, "M", 1), "invalid M '1'"),
        (("kb", 3, "EF", 0), "invalid EF '0'"),
        (("kb", 3, "EF_CONSTRUCTION", -1), "invalid EF_CONSTRUCTION '-1'"),
        (("kb", 3, "CAPACITY", -1), "invalid CAPACITY '-1'"),
        (("kb", 3, "EVICT", "NONE"), "syntax error: EVICT must follow CAPACITY n"),
        (("kb", 3, "CAPACITY", 3, "EVICT", "RANDOM"), "invalid EVICT 'RANDOM': expected one of LOWCONF|OLDEST|NONE"),
        (("kb", 3, "WINDOW", 3), "invalid option 'WINDOW': expected METRIC, M, EF_CONSTRUCTION"),
        (("kb", 3, "EF"), "syntax error: EF needs a value"),
        (("", 3), "invalid ns: expected 1..512 bytes, got 0"),
    ],
)
def test_create_errors(r: redis.Redis, args: tuple[Any, ...], message: str) -> None:
    assert message in error(r, "AMEM.SEM.CREATE", *args)
    assert cmd(r, "AMEM.SEM.INFO", "kb") is None


# --- STORE ---------------------------------------------------------------------------------


def test_store_creates_replaces_and_keeps_created(r: redis.Redis) -> None:
    cmd(r, "AMEM.SEM.CREATE", "kb", 3)
    assert cmd(r, "AMEM.SEM.STORE", "kb", "pref", "likes tea", 1, 0, 0, "KIND", "preference",
               "CONFIDENCE", 0.7, "SOURCE", "chat-12", "DESCRIPTION", "drinks",
               "META", '{"n": 1}', "WITHCREATED") == 1
    first = record(cmd(r, "AMEM.SEM.GET", "kb", "pref"))
    assert list(first) == [b"id", b"text", b"kind", b"confidence", b"source", b"description",
                           b"meta", b"created", b"updated"]
    assert (first[b"text"], first[b"kind"], as_float(first[b"confidence"]), first[b"source"],
            first[b"description"], first[b"meta"]) == (
        b"likes tea", b"preference", 0.7, b"chat-12", b"drinks", b'{"n": 1}')
    time.sleep(0.005)
    assert cmd(r, "AMEM.SEM.STORE", "kb", "pref", "likes coffee", 0, 1, 0, "WITHCREATED") == 0
    second = record(cmd(r, "AMEM.SEM.GET", "kb", "pref"))
    # a replacement replaces text, vector and metadata, and keeps the creation time
    assert second == {b"id": b"pref", b"text": b"likes coffee", b"kind": b"fact",
                      b"confidence": second[b"confidence"], b"created": first[b"created"],
                      b"updated": second[b"updated"]}
    assert as_float(second[b"confidence"]) == 1.0
    assert second[b"updated"] > first[b"created"]
    assert hit_ids(cmd(r, "AMEM.SEM.RECALL", "kb", 1, 0, 1, 0)) == [b"pref"]
    assert info(r, "kb")[b"count"] == 1


def test_store_nx_xx(r: redis.Redis) -> None:
    cmd(r, "AMEM.SEM.CREATE", "kb", 2)
    assert cmd(r, "AMEM.SEM.STORE", "kb", "a", "t", 1, 0, "XX", "WITHCREATED") is None
    assert cmd(r, "AMEM.SEM.GET", "kb", "a") is None
    assert cmd(r, "AMEM.SEM.STORE", "kb", "a", "t1", 1, 0, "NX", "WITHCREATED") == 1
    assert cmd(r, "AMEM.SEM.STORE", "kb", "a", "t2", 1, 0, "NX", "WITHCREATED") is None
    assert cmd(r, "AMEM.SEM.STORE", "kb", "a", "t3", 1, 0, "xx", "WITHCREATED") == 0
    assert record(cmd(r, "AMEM.SEM.GET", "kb", "a"))[b"text"] == b"t3"
    assert "NX and XX cannot be used together" in error(
        r, "AMEM.SEM.STORE", "kb", "a", "t", 1, 0, "NX", "XX")


def test_store_ttl_and_px_set_expires_and_facts_expire(r: redis.Redis) -> None:
    cmd(r, "AMEM.SEM.CREATE", "kb", 2)
    now = int(time.time() * 1000)
    cmd(r, "AMEM.SEM.STORE", "kb", "long", "t", 1, 0, "TTL", 100)
    expires = record(cmd(r, "AMEM.SEM.GET", "kb", "long"))[b"expires"]
    assert now + 99_000 <= expires <= now + 101_000 + 5000
    cmd(r, "AMEM.SEM.STORE", "kb", "short", "t", 1, 0.1, "PX", 150)
    got = record(cmd(r, "AMEM.SEM.GET", "kb", "short"))
    assert list(got)[-1] == b"expires"
    assert hit_ids(cmd(r, "AMEM.SEM.RECALL", "kb", 5, 1, 0.1)) == [b"short", b"long"]
    time.sleep(0.2)
    assert cmd(r, "AMEM.SEM.GET", "kb", "short") is None
    assert hit_ids(cmd(r, "AMEM.SEM.RECALL", "kb", 5, 1, 0.1)) == [b"long"]
    assert hit_ids(cmd(r, "AMEM.SEM.LIST", "kb", "CURSOR", 0)[1]) == [b"long"]
    assert info(r, "kb")[b"count"] == 1
    # a store without TTL removes the earlier one (as SET does)
    cmd(r, "AMEM.SEM.STORE", "kb", "long", "t", 1, 0)
    assert b"expires" not in record(cmd(r, "AMEM.SEM.GET", "kb", "long"))
    assert "TTL and PX cannot be used together" in error(
        r, "AMEM.SEM.STORE", "kb", "x", "t", 1, 0, "TTL", 1, "PX", 5)
    assert "invalid TTL '0'" in error(r, "AMEM.SEM.STORE", "kb", "x", "t", 1, 0, "TTL", 0)


def test_store_with_fp32_blob_round_trips_through_withvector(r: redis.Redis) -> None:
    cmd(r, "AMEM.SEM.CREATE", "kb", 4, "METRIC", "L2")
    vec = [0.5, -1.25, 3.0, 1e-3]
    assert cmd(r, "AMEM.SEM.STORE", "kb", b"bin\x00id", b"\xffraw\r\n", "fp32", fp32(vec), "WITHCREATED") == 1
    got = record(cmd(r, "AMEM.SEM.GET", "kb", b"bin\x00id", "WITHVECTOR"))
    assert got[b"id"] == b"bin\x00id" and got[b"text"] == b"\xffraw\r\n"
    assert list(got)[-1] == b"vector"
    assert got[b"vector"] == fp32(vec)
    hit = record(cmd(r, "AMEM.SEM.RECALL", "kb", 1, "FP32", fp32(vec), "WITHVECTORS")[0])
    assert hit[b"vector"] == fp32(vec)
    assert as_float(hit[b"similarity"]) == pytest.approx(1.0)
    assert b"vector" not in record(cmd(r, "AMEM.SEM.GET", "kb", b"bin\x00id"))


def test_cosine_vectors_come_back_unit_length(r: redis.Redis) -> None:
    cmd(r, "AMEM.SEM.CREATE", "kb", 2)
    cmd(r, "AMEM.SEM.STORE", "kb", "a", "t", 3, 4)
    vec = record(cmd(r, "AMEM.SEM.GET", "kb", "a", "WITHVECTOR"))[b"vector"]
    assert np.frombuffer(vec, "<f4").tolist() == pytest.approx([0.6, 0.8])


@pytest.mark.parametrize(
    ("vector", "message"),
    [
        ((0.1, 0.2), "DIM expected 3 values, got 2"),
        ((0.1, 0.2, 0.3, 0.4), "DIM expected 3 values, got 4"),
        ((0.1, 0.2, "KIND", "x"), "DIM expected 3 values, got 2"),
        (("KIND", "x"), "DIM expected 3 values, got 0"),
        ((1, "nan", 2), "DIM invalid vector value 'nan' at position 2: expected a finite"),
        ((1, 2, "inf"), "DIM invalid vector value 'inf' at position 3"),
        ((1, 2, "1e39"), "DIM invalid vector value '1e39' at position 3"),
        ((0, 0, 0), "DIM zero vector: COSINE needs at least one non-zero value"),
        (("FP32", fp32([1, 2])), "DIM expected a blob of 12 bytes (3 FP32 values), got 8 bytes"),
        (("FP32", fp32([1, 2, 3, 4])), "DIM expected a blob of 12 bytes (3 FP32 values), got 16"),
        (("FP32",), "DIM expected a blob of 12 bytes (3 FP32 values) after FP32, got none"),
        (("FP32", fp32([1, float("nan"), 3])), "DIM invalid vector value nan at position 2"),
        (("FP32", fp32([0, 0, 0])), "DIM zero vector"),
    ],
)
def test_store_and_recall_dim_errors(r: redis.Redis, vector: tuple[Any, ...], message: str) -> None:
    cmd(r, "AMEM.SEM.CREATE", "kb", 3)
    assert message in error(r, "AMEM.SEM.STORE", "kb", "a", "text", *vector)
    assert message in error(r, "AMEM.SEM.RECALL", "kb", 5, *vector)
    assert info(r, "kb")[b"count"] == 0


def test_zero_vectors_are_fine_under_l2_and_ip(r: redis.Redis) -> None:
    for metric in ("L2", "IP"):
        cmd(r, "AMEM.SEM.CREATE", metric, 2, "METRIC", metric)
        assert cmd(r, "AMEM.SEM.STORE", metric, "zero", "t", 0, 0, "WITHCREATED") == 1
        assert hit_ids(cmd(r, "AMEM.SEM.RECALL", metric, 1, 0, 0)) == [b"zero"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("KIND", "Fact"), "invalid KIND 'Fact': expected 1..32 characters of a-z 0-9 _ -"),
        (("KIND", "a" * 33), "invalid KIND"),
        (("KIND", "a b"), "invalid KIND"),
        (("CONFIDENCE", 1.5), "invalid CONFIDENCE '1.5': expected a number 0.0..1.0"),
        (("CONFIDENCE", "high"), "invalid CONFIDENCE 'high'"),
        (("META", "[1]"), "invalid META: expected a JSON object"),
        (("META", "{bad"), "invalid META: expected a JSON object"),
        (("SOURCE",), "syntax error: SOURCE needs a value"),
        (("WITHVECTORS",), "invalid option 'WITHVECTORS': expected NX, XX, TTL, PX, PXAT, KIND"),
    ],
)
def test_store_option_errors(r: redis.Redis, options: tuple[Any, ...], message: str) -> None:
    cmd(r, "AMEM.SEM.CREATE", "kb", 2)
    assert message in error(r, "AMEM.SEM.STORE", "kb", "a", "t", 1, 0, *options)
    assert cmd(r, "AMEM.SEM.GET", "kb", "a") is None


def test_store_into_missing_namespace_is_notfound(r: redis.Redis) -> None:
    assert error(r, "AMEM.SEM.STORE", "nope", "a", "t", 1, 0) == (
        "NOTFOUND no semantic namespace 'nope'; create it with AMEM.SEM.CREATE")
    cmd(r, "AMEM.SEM.CREATE", "kb", 2)
    assert "invalid id: expected 1..512 bytes, got 0" in error(
        r, "AMEM.SEM.STORE", "kb", "", "t", 1, 0)
    assert "invalid id: expected 1..512 bytes, got 513" in error(
        r, "AMEM.SEM.STORE", "kb", "x" * 513, "t", 1, 0)
    # the vector may be left out (a namespace with an embedder makes it), so a namespace
    # without one says what is missing rather than the arity
    assert error(r, "AMEM.SEM.STORE", "kb", "a", "t") == "DIM expected 2 values, got 0"
    assert "wrong number of arguments for 'amem.sem.store'" in error(
        r, "AMEM.SEM.STORE", "kb", "a")


# --- capacity and eviction -------------------------------------------------------------------


def test_evict_none_refuses_new_ids_with_full(r: redis.Redis) -> None:
    cmd(r, "AMEM.SEM.CREATE", "kb", 2, "CAPACITY", 2, "EVICT", "NONE")
    cmd(r, "AMEM.SEM.STORE", "kb", "a", "t", 1, 0)
    cmd(r, "AMEM.SEM.STORE", "kb", "b", "t", 0, 1)
    assert error(r, "AMEM.SEM.STORE", "kb", "c", "t", 1, 1) == (
        "FULL semantic namespace 'kb' holds its CAPACITY of 2 facts and EVICT is NONE")
    assert cmd(r, "AMEM.SEM.STORE", "kb", "a", "new text", 1, 0, "WITHCREATED") == 0  # replacing is fine
    assert cmd(r, "AMEM.SEM.STORE", "kb", "c", "t", 1, 1, "XX", "WITHCREATED") is None  # XX decides first
    cmd(r, "AMEM.SEM.DEL", "kb", "b")
    assert cmd(r, "AMEM.SEM.STORE", "kb", "c", "t", 1, 1, "WITHCREATED") == 1


def test_lowconf_and_oldest_eviction(r: redis.Redis) -> None:
    cmd(r, "AMEM.SEM.CREATE", "low", 2, "CAPACITY", 3)  # EVICT defaults to LOWCONF
    for ident, conf in (("a", 0.9), ("b", 0.3), ("c", 0.3)):
        cmd(r, "AMEM.SEM.STORE", "low", ident, "t", 1, 0, "CONFIDENCE", conf)
    cmd(r, "AMEM.SEM.STORE", "low", "d", "t", 1, 0, "CONFIDENCE", 0.5)  # b: lowest, older
    assert hit_ids(cmd(r, "AMEM.SEM.LIST", "low", "CURSOR", 0)[1]) == [b"a", b"c", b"d"]
    cmd(r, "AMEM.SEM.STORE", "low", "e", "t", 1, 0, "CONFIDENCE", 1)  # c
    assert hit_ids(cmd(r, "AMEM.SEM.LIST", "low", "CURSOR", 0)[1]) == [b"a", b"d", b"e"]

    cmd(r, "AMEM.SEM.CREATE", "old", 2, "CAPACITY", 2, "EVICT", "OLDEST")
    cmd(r, "AMEM.SEM.STORE", "old", "a", "t", 1, 0, "CONFIDENCE", 1)
    cmd(r, "AMEM.SEM.STORE", "old", "b", "t", 1, 0, "CONFIDENCE", 0.1)
    cmd(r, "AMEM.SEM.STORE", "old", "a", "t", 1, 0)  # a is now the most recently updated
    cmd(r, "AMEM.SEM.STORE", "old", "c", "t", 1, 0)
    assert hit_ids(cmd(r, "AMEM.SEM.LIST", "old", "CURSOR", 0)[1]) == [b"a", b"c"]
    assert info(r, "old")[b"count"] == 2


# --- RECALL --------------------------------------------------------------------------------


def load_directions(r: redis.Redis) -> None:
    cmd(r, "AMEM.SEM.CREATE", "kb", 2)
    facts = [
        ("/prefs/tea", (1.0, 0.0), "preference", 0.9),
        ("/prefs/coffee", (0.9, 0.1), "preference", 0.4),
        ("/notes/a", (0.7, 0.7), "fact", 0.8),
        ("/notes/b", (0.0, 1.0), "fact", 0.2),
        ("/notes/c", (-1.0, 0.1), "insight", 1.0),
    ]
    for ident, vec, kind, conf in facts:
        cmd(r, "AMEM.SEM.STORE", "kb", ident, f"text of {ident}", *vec, "KIND", kind,
            "CONFIDENCE", conf)


def test_recall_orders_by_similarity_and_applies_filters(r: redis.Redis) -> None:
    load_directions(r)
    reply = cmd(r, "AMEM.SEM.RECALL", "kb", 10, 1, 0)
    assert hit_ids(reply) == [b"/prefs/tea", b"/prefs/coffee", b"/notes/a", b"/notes/b",
                              b"/notes/c"]
    sims = [as_float(rec[b"similarity"]) for rec in records(reply)]
    assert sims == sorted(sims, reverse=True)
    assert sims[0] == pytest.approx(1.0) and sims[3] == pytest.approx(0.0, abs=1e-6)
    assert hit_ids(cmd(r, "AMEM.SEM.RECALL", "kb", 2, 1, 0)) == [b"/prefs/tea", b"/prefs/coffee"]
    assert hit_ids(cmd(r, "AMEM.SEM.RECALL", "kb", 10, 1, 0, "MINSIM", 0.5)) == [
        b"/prefs/tea", b"/prefs/coffee", b"/notes/a"]
    assert hit_ids(cmd(r, "AMEM.SEM.RECALL", "kb", 10, 1, 0, "KIND", "fact")) == [
        b"/notes/a", b"/notes/b"]
    assert hit_ids(cmd(r, "AMEM.SEM.RECALL", "kb", 10, 1, 0, "MINCONF", 0.8)) == [
        b"/prefs/tea", b"/notes/a", b"/notes/c"]
    assert hit_ids(cmd(r, "AMEM.SEM.RECALL", "kb", 10, 1, 0, "PREFIX", "/notes/")) == [
        b"/notes/a", b"/notes/b", b"/notes/c"]
    assert hit_ids(cmd(r, "AMEM.SEM.RECALL", "kb", 1, 0, 1, "prefix", "/prefs/", "minconf", 0.5,
                       "kind", "preference", "ef", 5, "minsim", -1)) == [b"/prefs/tea"]
    assert cmd(r, "AMEM.SEM.RECALL", "kb", 10, 1, 0, "KIND", "goal") == []


def test_recall_returns_k_hits_when_a_filter_keeps_2_percent(r: redis.Redis) -> None:
    rng = np.random.default_rng(21)
    data = rng.standard_normal((1000, 16)).astype("<f4")
    cmd(r, "AMEM.SEM.CREATE", "kb", 16)
    pipe = r.pipeline(transaction=False)
    for i, row in enumerate(data):
        pipe.execute_command("AMEM.SEM.STORE", "kb", f"f{i:04d}", "t", "FP32", row.tobytes(),
                             "KIND", "rare" if i % 50 == 0 else "fact",
                             "CONFIDENCE", 0.9 if i % 50 == 0 else 0.5)
    pipe.execute()
    query = rng.standard_normal(16).astype("<f4")
    unit = data / np.linalg.norm(data, axis=1, keepdims=True)
    order = np.argsort(-(unit @ (query / np.linalg.norm(query))))
    want = [f"f{i:04d}".encode() for i in order if i % 50 == 0][:10]
    for option in (("KIND", "rare"), ("MINCONF", 0.8)):
        got = hit_ids(cmd(r, "AMEM.SEM.RECALL", "kb", 10, "FP32", query.tobytes(), *option))
        assert got == want


def test_recall_metrics_ip_and_l2(r: redis.Redis) -> None:
    cmd(r, "AMEM.SEM.CREATE", "ip", 2, "METRIC", "IP")
    cmd(r, "AMEM.SEM.STORE", "ip", "big", "t", 3, 0)
    cmd(r, "AMEM.SEM.STORE", "ip", "small", "t", 1, 0)
    hits = records(cmd(r, "AMEM.SEM.RECALL", "ip", 2, 2, 1))
    assert [(h[b"id"], as_float(h[b"similarity"])) for h in hits] == [
        (b"big", pytest.approx(6.0)), (b"small", pytest.approx(2.0))]
    cmd(r, "AMEM.SEM.CREATE", "l2", 2, "METRIC", "L2")
    cmd(r, "AMEM.SEM.STORE", "l2", "near", "t", 1, 1)
    cmd(r, "AMEM.SEM.STORE", "l2", "far", "t", 4, 5)
    hits = records(cmd(r, "AMEM.SEM.RECALL", "l2", 2, 1, 1))
    assert [(h[b"id"], as_float(h[b"similarity"])) for h in hits] == [
        (b"near", pytest.approx(1.0)), (b"far", pytest.approx(1 / (1 + 5)))]


def test_recall_errors(r: redis.Redis) -> None:
    assert error(r, "AMEM.SEM.RECALL", "nope", 3, 1, 0).startswith("NOTFOUND")
    cmd(r, "AMEM.SEM.CREATE", "kb", 2)
    assert "invalid k '0': expected an integer 1..1000" in error(r, "AMEM.SEM.RECALL", "kb", 0, 1, 0)
    assert "invalid k '1001'" in error(r, "AMEM.SEM.RECALL", "kb", 1001, 1, 0)
    assert "invalid MINSIM 'x'" in error(r, "AMEM.SEM.RECALL", "kb", 1, 1, 0, "MINSIM", "x")
    assert "invalid MINCONF '2'" in error(r, "AMEM.SEM.RECALL", "kb", 1, 1, 0, "MINCONF", 2)
    assert "invalid EF '0'" in error(r, "AMEM.SEM.RECALL", "kb", 1, 1, 0, "EF", 0)
    assert "invalid KIND" in error(r, "AMEM.SEM.RECALL", "kb", 1, 1, 0, "KIND", "A!")
    assert "invalid option 'NX': expected MINSIM" in error(r, "AMEM.SEM.RECALL", "kb", 1, 1, 0, "NX")
    assert "wrong number of arguments" in error(r, "AMEM.SEM.RECALL", "kb", 1)
    assert cmd(r, "AMEM.SEM.RECALL", "kb", 5, 1, 0) == []  # empty namespace


# --- GET, DEL, LIST, INFO, DROP --------------------------------------------------------------


def test_get(r: redis.Redis) -> None:
    assert cmd(r, "AMEM.SEM.GET", "nope", "a") is None
    cmd(r, "AMEM.SEM.CREATE", "kb", 2)
    assert cmd(r, "AMEM.SEM.GET", "kb", "a") is None
    cmd(r, "AMEM.SEM.STORE", "kb", "a", "t", 1, 0)
    assert record(cmd(r, "AMEM.SEM.GET", "kb", "a"))[b"id"] == b"a"
    assert "invalid option 'WITHVECTORS': expected WITHVECTOR" in error(
        r, "AMEM.SEM.GET", "kb", "a", "WITHVECTORS")


def test_del(r: redis.Redis) -> None:
    assert cmd(r, "AMEM.SEM.DEL", "nope", "a") == 0
    cmd(r, "AMEM.SEM.CREATE", "kb", 2)
    for ident in ("a", "b", "c"):
        cmd(r, "AMEM.SEM.STORE", "kb", ident, "t", 1, 0)
    assert cmd(r, "AMEM.SEM.DEL", "kb", "a", "a", "b", "zz") == 2
    assert cmd(r, "AMEM.SEM.DEL", "kb", "a") == 0
    assert hit_ids(cmd(r, "AMEM.SEM.RECALL", "kb", 10, 1, 0)) == [b"c"]
    assert info(r, "kb")[b"count"] == 1
    # the freed slots are reused by new facts
    cmd(r, "AMEM.SEM.STORE", "kb", "d", "t", 0, 1)
    assert hit_ids(cmd(r, "AMEM.SEM.RECALL", "kb", 10, 0, 1)) == [b"d", b"c"]


def test_list_pages_in_id_order(r: redis.Redis) -> None:
    assert cmd(r, "AMEM.SEM.LIST", "nope", "CURSOR", 0) == [b"0", []]
    load_directions(r)
    cursor, page = cmd(r, "AMEM.SEM.LIST", "kb", "COUNT", 2)
    assert hit_ids(page) == [b"/notes/a", b"/notes/b"]
    assert cursor == b"/notes/b".hex().encode()
    cursor, page = cmd(r, "AMEM.SEM.LIST", "kb", "COUNT", 2, "CURSOR", cursor)
    assert hit_ids(page) == [b"/notes/c", b"/prefs/coffee"]
    cursor, page = cmd(r, "AMEM.SEM.LIST", "kb", "CURSOR", cursor, "COUNT", 2)
    assert hit_ids(page) == [b"/prefs/tea"] and cursor == b"0"
    first = records(cmd(r, "AMEM.SEM.LIST", "kb", "COUNT", 1)[1])[0]
    assert list(first) == [b"id", b"text", b"kind", b"confidence", b"created", b"updated"]
    assert hit_ids(cmd(r, "AMEM.SEM.LIST", "kb", "PREFIX", "/prefs/", "CURSOR", 0)[1]) == [
        b"/prefs/coffee", b"/prefs/tea"]
    assert hit_ids(cmd(r, "AMEM.SEM.LIST", "kb", "KIND", "fact", "CURSOR", 0)[1]) == [b"/notes/a", b"/notes/b"]
    assert cmd(r, "AMEM.SEM.LIST", "kb", "PREFIX", "/notes/", "KIND", "preference", "CURSOR", 0) == [b"0", []]


def test_list_walks_everything_across_pages(r: redis.Redis) -> None:
    cmd(r, "AMEM.SEM.CREATE", "kb", 2)
    pipe = r.pipeline(transaction=False)
    for i in range(250):
        pipe.execute_command("AMEM.SEM.STORE", "kb", f"id-{i:03d}", "t", 1, i)
    pipe.execute()
    seen: list[bytes] = []
    cursor: Any = 0
    while True:
        cursor, page = cmd(r, "AMEM.SEM.LIST", "kb", "CURSOR", cursor)
        seen += hit_ids(page)
        assert len(page) <= 100
        if cursor == b"0":
            break
    assert seen == [f"id-{i:03d}".encode() for i in range(250)]
    assert len(cmd(r, "AMEM.SEM.LIST", "kb", "COUNT", 1000)[1]) == 250


def test_list_errors(r: redis.Redis) -> None:
    cmd(r, "AMEM.SEM.CREATE", "kb", 2)
    assert "invalid COUNT '0': expected an integer 1..1000" in error(
        r, "AMEM.SEM.LIST", "kb", "COUNT", 0)
    assert "invalid COUNT '1001'" in error(r, "AMEM.SEM.LIST", "kb", "COUNT", 1001)
    assert "invalid CURSOR 'xyz': expected 0 or a cursor returned by AMEM.SEM.LIST" in error(
        r, "AMEM.SEM.LIST", "kb", "CURSOR", "xyz")
    assert "invalid option 'MATCH'" in error(r, "AMEM.SEM.LIST", "kb", "MATCH", "*", "CURSOR", 0)


def test_info_and_drop(r: redis.Redis) -> None:
    assert cmd(r, "AMEM.SEM.DROP", "kb") == 0
    cmd(r, "AMEM.SEM.CREATE", "kb", 2)
    cmd(r, "AMEM.SEM.STORE", "kb", "a", "t", 1, 0)
    assert info(r, "kb")[b"count"] == 1
    assert cmd(r, "AMEM.SEM.DROP", "kb") == 1
    assert cmd(r, "AMEM.SEM.INFO", "kb") is None
    assert error(r, "AMEM.SEM.RECALL", "kb", 1, 1, 0).startswith("NOTFOUND")
    cmd(r, "AMEM.SEM.CREATE", "kb", 3)  # the name is free again, with new settings
    assert info(r, "kb")[b"dim"] == 3 and info(r, "kb")[b"count"] == 0
    assert "wrong number of arguments for 'amem.sem.info'" in error(r, "AMEM.SEM.INFO", "a", "b")


# --- across the server -------------------------------------------------------------------------


def test_multi_exec_and_flushall(r: redis.Redis) -> None:
    cmd(r, "AMEM.SEM.CREATE", "kb", 2)
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("AMEM.SEM.STORE", "kb", "a", "t", 1, 0, "WITHCREATED")
    pipe.execute_command("AMEM.SEM.STORE", "kb", "b", "t", 0, 1, "WITHCREATED")
    pipe.execute_command("AMEM.SEM.RECALL", "kb", 1, 0, 1)
    stored_a, stored_b, recalled = pipe.execute()
    assert (stored_a, stored_b, hit_ids(recalled)) == (1, 1, [b"b"])
    assert cmd(r, "FLUSHALL") in (b"OK", True)
    assert cmd(r, "AMEM.SEM.INFO", "kb") is None


def test_command_table_knows_the_key_position(r: redis.Redis) -> None:
    def keys(*argv: Any) -> list[bytes]:
        return [k.encode() if isinstance(k, str) else k for k in r.command_getkeys(*argv)]

    assert keys("AMEM.SEM.STORE", "kb", "a", "t", 1, 0, "WITHCREATED") == [b"kb"]
    assert keys("AMEM.SEM.RECALL", "kb", 3, 1, 0) == [b"kb"]
    assert keys("AMEM.SEM.DEL", "kb", "a", "b") == [b"kb"]


# --- SEARCH (text and hybrid), RECALL EXACT, INFO's recall self-check ---------------------------


def load_invoices(r: redis.Redis, n: int = 60) -> np.ndarray:
    """``n`` invoices in namespace kb (dim 16, random vectors); every 10th is kind "note"."""
    rng = np.random.default_rng(1)
    data = rng.standard_normal((n, 16)).astype("<f4")
    cmd(r, "AMEM.SEM.CREATE", "kb", 16)
    pipe = r.pipeline(transaction=False)
    for i, row in enumerate(data):
        pipe.execute_command(
            "AMEM.SEM.STORE", "kb", f"inv/{i:03d}",
            f"Invoice INV-{i:05d} for {['Acme', 'Globex', 'Initech'][i % 3]} totals {100 + i}.50 EUR",
            "FP32", row.tobytes(), "KIND", "note" if i % 10 == 0 else "fact",
            "CONFIDENCE", 0.9 if i % 2 else 0.4)
    pipe.execute()
    return data


def test_search_by_text_reply(r: redis.Redis) -> None:
    load_invoices(r)
    cmd(r, "AMEM.SEM.STORE", "kb", "extra", "see the other one", *([0.5] * 16),
        "DESCRIPTION", "about INV-00007", "SOURCE", "mail", "META", '{"a":1}', "PX", 60_000)
    hits = records(cmd(r, "AMEM.SEM.SEARCH", "kb", 5, "TEXT", "INV-00007"))
    # the description is searched too; the shorter fact ranks first (BM25 length norm)
    assert [h[b"id"] for h in hits] == [b"extra", b"inv/007"]
    hit = hits[1]
    assert list(hit) == [b"id", b"text", b"score", b"text_score", b"kind", b"confidence",
                         b"created", b"updated"]
    assert hit[b"text"] == b"Invoice INV-00007 for Globex totals 107.50 EUR"
    assert as_float(hit[b"score"]) == as_float(hit[b"text_score"]) > 0
    assert list(hits[0]) == [b"id", b"text", b"score", b"text_score", b"kind", b"confidence",
                             b"source", b"description", b"meta", b"created", b"updated",
                             b"expires"]
    assert as_float(hits[0][b"score"]) > as_float(hits[1][b"score"])
    # an amount; lower-case option names; k caps the hits; no match is an empty array
    assert [h[b"id"] for h in records(cmd(r, "amem.sem.search", "kb", 5, "text", "112.50"))] == [
        b"inv/012"]
    assert len(cmd(r, "AMEM.SEM.SEARCH", "kb", 3, "TEXT", "acme invoice")) == 3
    assert cmd(r, "AMEM.SEM.SEARCH", "kb", 3, "TEXT", "zebra") == []
    assert cmd(r, "AMEM.SEM.SEARCH", "kb", 3, "TEXT", "") == []


def test_search_hybrid_reply_and_fusions(r: redis.Redis) -> None:
    data = load_invoices(r)
    unit = data / np.linalg.norm(data, axis=1, keepdims=True)
    noisy = unit[3] + 0.9 * unit[42]  # an embedding nearer invoice 3 than invoice 42
    assert hit_ids(cmd(r, "AMEM.SEM.RECALL", "kb", 1, "FP32", fp32(noisy))) == [b"inv/003"]
    for fusion in ([], ["FUSION", "RRF"], ["FUSION", "LINEAR"], ["FUSION", "linear", "ALPHA", 0.5]):
        hits = records(cmd(r, "AMEM.SEM.SEARCH", "kb", 4, "TEXT", "INV-00042",
                           "VECTOR", "FP32", fp32(noisy), *fusion))
        assert hits[0][b"id"] == b"inv/042", fusion
        assert b"inv/003" in [h[b"id"] for h in hits]
        assert list(hits[0])[:6] == [b"id", b"text", b"score", b"text_score", b"similarity",
                                     b"kind"]
        scores = [as_float(h[b"score"]) for h in hits]
        assert scores == sorted(scores, reverse=True)
    rrf = records(cmd(r, "AMEM.SEM.SEARCH", "kb", 2, "TEXT", "INV-00042",
                      "VECTOR", "FP32", fp32(noisy)))
    # INV-00042: first by text and second by vector; invoice 3: first by vector only
    assert as_float(rrf[0][b"score"]) == pytest.approx(1 / 61 + 1 / 62)
    assert as_float(rrf[1][b"score"]) == pytest.approx(1 / 61)
    assert as_float(rrf[1][b"text_score"]) == 0.0
    # a decimal vector works as in RECALL
    decimal = records(cmd(r, "AMEM.SEM.SEARCH", "kb", 2, "TEXT", "INV-00042",
                          "VECTOR", *[float(x) for x in noisy]))
    assert [h[b"id"] for h in decimal] == [h[b"id"] for h in rrf]


def test_search_filters_and_minscore(r: redis.Redis) -> None:
    load_invoices(r)
    notes = records(cmd(r, "AMEM.SEM.SEARCH", "kb", 4, "TEXT", "acme invoice", "KIND", "note"))
    assert len(notes) == 4 and all(h[b"kind"] == b"note" for h in notes)
    confident = records(cmd(r, "AMEM.SEM.SEARCH", "kb", 5, "TEXT", "acme", "MINCONF", 0.8,
                            "VECTOR", *([1.0] * 16)))
    assert len(confident) == 5 and all(as_float(h[b"confidence"]) >= 0.8 for h in confident)
    prefixed = records(cmd(r, "AMEM.SEM.SEARCH", "kb", 5, "TEXT", "invoice", "PREFIX", "inv/05"))
    assert [h[b"id"] for h in prefixed] == [b"inv/050", b"inv/051", b"inv/052", b"inv/053",
                                            b"inv/054"]
    best = as_float(records(cmd(r, "AMEM.SEM.SEARCH", "kb", 1, "TEXT", "INV-00009 acme"))[0][b"score"])
    assert hit_ids(cmd(r, "AMEM.SEM.SEARCH", "kb", 5, "TEXT", "INV-00009 acme",
                       "MINSCORE", best)) == [b"inv/009"]


def test_search_sees_every_write_at_once(r: redis.Redis) -> None:
    cmd(r, "AMEM.SEM.CREATE", "kb", 2)
    cmd(r, "AMEM.SEM.STORE", "kb", "a", "the refund window is 30 days", 1, 0)
    assert hit_ids(cmd(r, "AMEM.SEM.SEARCH", "kb", 3, "TEXT", "refund")) == [b"a"]
    cmd(r, "AMEM.SEM.STORE", "kb", "a", "the return window is 14 days", 1, 0)
    assert cmd(r, "AMEM.SEM.SEARCH", "kb", 3, "TEXT", "refund") == []
    assert hit_ids(cmd(r, "AMEM.SEM.SEARCH", "kb", 3, "TEXT", "return")) == [b"a"]
    cmd(r, "AMEM.SEM.STORE", "kb", "b", "a return needs a receipt", 0, 1, "PX", 150)
    assert hit_ids(cmd(r, "AMEM.SEM.SEARCH", "kb", 3, "TEXT", "returns")) == [b"b", b"a"]
    time.sleep(0.2)
    assert hit_ids(cmd(r, "AMEM.SEM.SEARCH", "kb", 3, "TEXT", "return")) == [b"a"]
    assert cmd(r, "AMEM.SEM.DEL", "kb", "a") == 1
    assert cmd(r, "AMEM.SEM.SEARCH", "kb", 3, "TEXT", "return") == []
    cmd(r, "AMEM.SEM.CREATE", "kb", 2, "CAPACITY", 1, "EVICT", "OLDEST", "UPDATE")
    cmd(r, "AMEM.SEM.STORE", "kb", "c", "first", 1, 0)
    cmd(r, "AMEM.SEM.STORE", "kb", "d", "second", 1, 0)  # evicts c
    assert cmd(r, "AMEM.SEM.SEARCH", "kb", 3, "TEXT", "first") == []
    assert hit_ids(cmd(r, "AMEM.SEM.SEARCH", "kb", 3, "TEXT", "second")) == [b"d"]


def test_search_errors(r: redis.Redis) -> None:
    cmd(r, "AMEM.SEM.CREATE", "kb", 2)
    assert error(r, "AMEM.SEM.SEARCH", "nope", 3, "TEXT", "x").startswith("NOTFOUND")
    assert "AMEM.SEM.SEARCH needs TEXT query" in error(r, "AMEM.SEM.SEARCH", "kb", 3, "VECTOR", 1, 0)
    assert "FUSION and ALPHA need VECTOR" in error(r, "AMEM.SEM.SEARCH", "kb", 3, "TEXT", "x",
                                                   "FUSION", "RRF")
    assert "ALPHA applies to FUSION LINEAR only" in error(
        r, "AMEM.SEM.SEARCH", "kb", 3, "TEXT", "x", "VECTOR", 1, 0, "ALPHA", 0.5)
    assert "FUSION" in error(r, "AMEM.SEM.SEARCH", "kb", 3, "TEXT", "x", "VECTOR", 1, 0,
                             "FUSION", "MAX")
    assert "ALPHA" in error(r, "AMEM.SEM.SEARCH", "kb", 3, "TEXT", "x", "VECTOR", 1, 0,
                            "FUSION", "LINEAR", "ALPHA", 1.5)
    assert error(r, "AMEM.SEM.SEARCH", "kb", 3, "TEXT", "x", "VECTOR", 1, 0, 0).startswith(
        "DIM expected 2 values, got 3")
    assert error(r, "AMEM.SEM.SEARCH", "kb", 3, "TEXT", "x", "VECTOR", "FP32", b"\0" * 4
                 ).startswith("DIM")
    assert "option" in error(r, "AMEM.SEM.SEARCH", "kb", 3, "TEXT", "x", "WITHVECTORS")
    assert "k" in error(r, "AMEM.SEM.SEARCH", "kb", 0, "TEXT", "x")
    assert "TEXT" in error(r, "AMEM.SEM.SEARCH", "kb", 3, "MINSCORE", 1, "TEXT")
    assert "wrong number of arguments" in error(r, "AMEM.SEM.SEARCH", "kb", 3, "TEXT")


def test_recall_exact_has_the_same_reply(r: redis.Redis) -> None:
    data = load_invoices(r)
    rng = np.random.default_rng(4)
    for query in rng.standard_normal((3, 16)).astype("<f4"):
        unit = data / np.linalg.norm(data, axis=1, keepdims=True)
        want = [f"inv/{i:03d}".encode() for i in np.argsort(-(unit @ query))[:5]]
        exact = records(cmd(r, "AMEM.SEM.RECALL", "kb", 5, "FP32", fp32(query), "EXACT"))
        assert [h[b"id"] for h in exact] == want
        hnsw = records(cmd(r, "AMEM.SEM.RECALL", "kb", 5, "FP32", fp32(query)))
        assert [list(h) for h in exact] == [list(h) for h in hnsw]
    notes = hit_ids(cmd(r, "AMEM.SEM.RECALL", "kb", 3, "FP32", fp32(data[0]), "KIND", "note",
                        "exact", "WITHVECTORS"))
    assert notes[0] == b"inv/000" and len(notes) == 3


def test_info_reports_the_recall_self_check(r: redis.Redis) -> None:
    load_invoices(r)
    deadline = time.time() + 10
    while b"recall_estimate" not in (fields := info(r, "kb")) and time.time() < deadline:
        time.sleep(0.05)
    assert list(fields) == [b"dim", b"metric", b"count", b"capacity", b"evict", b"m",
                            b"ef_construction", b"ef", b"recall_estimate", b"recall_sample",
                            b"recall_checked"]
    assert as_float(fields[b"recall_estimate"]) == pytest.approx(1.0)  # 60 facts: exact
    # 32 queries, or as many facts as the namespace held when the cron's first check began
    # (a namespace never checked is due at once: on a loaded machine that can be mid-load;
    # the exact sample size is held in tests/stores/test_sem.py and below, in process)
    assert 2 <= fields[b"recall_sample"] <= 32
    assert abs(fields[b"recall_checked"] - time.time() * 1000) < 60_000


def test_search_command_table_entry(r: redis.Redis) -> None:
    entry = cmd(r, "COMMAND", "INFO", "AMEM.SEM.SEARCH")["amem.sem.search"]  # parsed by redis-py
    assert (entry["arity"], entry["first_key_pos"], entry["last_key_pos"],
            entry["step_count"]) == (-5, 1, 1, 1)
    assert [f.decode() if isinstance(f, bytes) else f for f in entry["flags"]] == ["readonly"]
    assert [k.encode() if isinstance(k, str) else k
            for k in r.command_getkeys("AMEM.SEM.SEARCH", "kb", 3, "TEXT", "x")] == [b"kb"]


def test_hotkv_client_search_recall_exact_and_info(r: redis.Redis) -> None:
    """The hotkv client's methods for these commands, with every option, decode the same
    way in RESP2 and RESP3 (floats are floats)."""
    import hotkv_server as hotkv

    data = load_invoices(r, 1100)  # large enough for the EXACT scan to read the index in bulk
    kwargs = r.connection_pool.connection_kwargs
    hk = hotkv.from_url(f"hotkv://127.0.0.1:{kwargs['port']}", protocol=kwargs["protocol"])
    try:
        hits = hk.amem_sem_search("kb", 3, "INV-00042")
        assert [h["id"] for h in hits] == ["inv/042"]
        assert isinstance(hits[0]["score"], float) and hits[0]["score"] == hits[0]["text_score"]
        hybrid = hk.amem_sem_search("kb", 4, "acme invoice", vector=data[5], fusion="linear",
                                    alpha=0.5, minscore=0.1, kind="fact", minconf=0.8,
                                    prefix="inv/0")
        assert 0 < len(hybrid) <= 4
        for hit in hybrid:
            assert isinstance(hit["similarity"], float) and hit["score"] >= 0.1
            assert hit["kind"] == "fact" and hit["confidence"] >= 0.8
            assert hit["id"].startswith("inv/0")
        rrf = hk.amem_sem_search("kb", 2, "INV-00005", vector=data[5])
        assert rrf[0]["id"] == "inv/005" and rrf[0]["score"] == pytest.approx(2 / 61)
        exact = hk.amem_sem_recall("kb", 5, data[7], exact=True)
        unit = data / np.linalg.norm(data, axis=1, keepdims=True)
        want = [f"inv/{i:03d}" for i in np.argsort(-(unit @ (data[7] / np.linalg.norm(data[7]))))[:5]]
        assert [h["id"] for h in exact] == want
        assert exact[0]["similarity"] == pytest.approx(1.0, abs=1e-5)
        deadline = time.time() + 15
        while "recall_estimate" not in (info_ := hk.amem_sem_info("kb") or {}):
            assert time.time() < deadline, info_
            time.sleep(0.05)
        assert isinstance(info_["recall_estimate"], float) and 0.0 <= info_["recall_estimate"] <= 1.0
        assert isinstance(info_["recall_sample"], int) and isinstance(info_["recall_checked"], int)
    finally:
        hk.close()


def test_self_check_scheduling_in_process() -> None:
    """RecallSelfCheck driven tick by tick on a Core with a manual clock (no event loop)."""
    from hotkv_server.commands.sem_service import SELF_CHECK_INTERVAL_MS, RecallSelfCheck
    from hotkv_server.engine.clock import ManualClock
    from hotkv_server.engine.core import Core

    clock = ManualClock()
    core = Core(clock=clock)
    db = core.db
    rng = np.random.default_rng(6)

    def store(ns: bytes, n: int, start: int = 0) -> None:
        for i in range(start, start + n):
            db.apply(["sem.store", ns, b"f%d" % i, b"t", fp32(rng.standard_normal(8)), b"fact",
                      1.0, None, None, None, clock.now_ms(), clock.now_ms(), None, []])

    for ns in (b"a", b"b", b"tiny"):
        db.apply(["sem.create", ns, 8, "COSINE", 16, 200, 64, 0, "LOWCONF"])
    store(b"a", 300)
    store(b"b", 300)
    store(b"tiny", 1)  # one fact has no neighbour: never due
    checker = RecallSelfCheck(core)
    sem = db.sem
    ticks = 0
    while sem.get(b"b").recall_estimate is None:
        checker.tick(budget=8 * 100)  # 100 facts a tick
        ticks += 1
        assert ticks < 20
    assert ticks == 6  # a: 3 slices, then b: 3 slices
    assert sem.get(b"a").recall_estimate == 1.0 and sem.get(b"a").recall_sample == 32
    assert sem.get(b"a").recall_checked == clock.now_ms()
    assert sem.get(b"tiny").recall_estimate is None
    checked = clock.now_ms()
    # unchanged: never due again; changed: due once the interval has passed
    for _ in range(5):
        checker.tick()
    assert sem.get(b"a").recall_checked == checked and checker.current is None
    store(b"b", 10, start=300)
    clock.advance(SELF_CHECK_INTERVAL_MS - 1)
    checker.tick()
    assert checker.current is None
    clock.advance(1)
    checker.tick()
    assert sem.get(b"b").recall_checked == clock.now_ms() and sem.get(b"a").recall_checked == checked
    # a namespace dropped in the middle of its check is let go
    store(b"a", 10, start=300)
    clock.advance(SELF_CHECK_INTERVAL_MS)
    checker.tick(budget=8 * 10)
    assert checker.current is not None and checker.current_name == b"a"
    db.apply(["sem.drop", b"a"])
    checker.tick(budget=8 * 10)
    assert checker.current is None
    # while loading, nothing runs
    core.loading = True
    store(b"b", 10, start=400)
    clock.advance(SELF_CHECK_INTERVAL_MS)
    checker.tick()
    assert checker.current is None


def test_search_answers_the_same_after_a_restart() -> None:
    """The BM25 index is not persisted: a restarted server rebuilds it from the rewritten
    AOF's snapshot (facts stored before BGREWRITEAOF) and from the AOF tail (after it), and
    SEARCH then gives the same hits with the same scores, in RESP2 and RESP3."""
    from helpers import HotkvProcess

    proc = HotkvProcess("--appendonly", "yes", "--appendfsync", "always").start()
    try:
        r = proc.client(protocol=3)
        data = load_invoices(r, 40)
        cmd(r, "AMEM.SEM.STORE", "kb", "extra", "see the other one", *([0.5] * 16),
            "DESCRIPTION", "about INV-00007")
        assert r.bgrewriteaof()
        deadline = time.time() + 20
        while r.info("persistence")["aof_rewrite_in_progress"]:
            assert time.time() < deadline, "BGREWRITEAOF did not finish in 20 s"
            time.sleep(0.05)
        # the AOF tail: a replacement, a deletion and a new fact after the snapshot
        cmd(r, "AMEM.SEM.STORE", "kb", "inv/003", "Invoice INV-00003 was cancelled by Acme",
            "FP32", data[3].tobytes())
        assert cmd(r, "AMEM.SEM.DEL", "kb", "inv/008") == 1
        cmd(r, "AMEM.SEM.STORE", "kb", "tail", "Globex asked about INV-00007 again",
            "FP32", data[9].tobytes(), "DESCRIPTION", "cancelled invoice")
        queries = [("TEXT", "INV-00007"), ("TEXT", "acme invoice"), ("TEXT", "cancelled"),
                   ("TEXT", "INV-00008"), ("TEXT", "globex 112.50"),
                   ("TEXT", "acme", "VECTOR", "FP32", data[3].tobytes()),
                   ("TEXT", "invoice", "VECTOR", "FP32", data[9].tobytes(), "FUSION", "LINEAR")]
        r.close()

        def replies() -> list[list[Any]]:
            out = []
            for protocol in (2, 3):
                client = proc.client(protocol=protocol)
                out += [records(cmd(client, "AMEM.SEM.SEARCH", "kb", 10, *q)) for q in queries]
                client.close()
            return out

        before = replies()
        assert [h[b"id"] for h in before[0]] == [b"extra", b"tail", b"inv/007"]
        assert [h[b"id"] for h in before[2]] == [b"inv/003", b"tail"]  # shorter first
        # deleted in the tail: the id is no longer a known compound, so only its words match
        assert before[3] and b"inv/008" not in [h[b"id"] for h in before[3]]
        proc.restart()
        assert replies() == before
    finally:
        proc.cleanup()
