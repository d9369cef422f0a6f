"""Store text and recall by meaning through the server's wordllama embedder, end to end.

A real hotkv-server process started offline (HF_HUB_OFFLINE=1, an empty HOME so no model
cache exists, and a proxy that refuses every connection), redis-py in RESP2 and RESP3 and
redis-cli; the effect of a store by text replays on a server with no embedder at all.
"""

from __future__ import annotations

import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
import redis

from helpers import HotkvProcess, record, records, require_tool

FACTS = {
    "vat": "VAT details on an invoice can be corrected within 30 days.",
    "cafe": "The cafeteria opens at 8am on weekdays and serves breakfast.",
    "refund": "Refunds go back to the original credit card within a week.",
    "parking": "Visitors park in the north garage, level two.",
}


def offline_env(monkeypatch: pytest.MonkeyPatch, home: str) -> None:
    """What a machine without a network looks like to a model loader."""
    monkeypatch.setenv("HOME", home)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("HF_HOME", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.setenv(var, "http://127.0.0.1:9")  # discard port: every request refused
    monkeypatch.setenv("NO_PROXY", "")


@pytest.fixture(scope="module")
def offline_server() -> Iterator[HotkvProcess]:
    mp = pytest.MonkeyPatch()
    home = tempfile.TemporaryDirectory(prefix="hotkv-empty-home-")
    offline_env(mp, home.name)
    try:
        proc = HotkvProcess("--appendonly", "yes").start()
    finally:
        mp.undo()
    try:
        yield proc
    finally:
        proc.cleanup()
        home.cleanup()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def r(request: pytest.FixtureRequest, offline_server: HotkvProcess) -> Iterator[redis.Redis]:
    client = offline_server.client(protocol=request.param)
    client.execute_command("FLUSHALL")
    try:
        yield client
    finally:
        client.close()


def fill(r: redis.Redis) -> None:
    assert r.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "wordllama") in (b"OK", "OK", True)
    for ident, text in FACTS.items():
        assert r.execute_command("AMEM.SEM.STORE", "kb", ident, text, "WITHCREATED") == 1


def recall_ids(r: redis.Redis, k: int, query: str, *extra: str) -> list[bytes]:
    return [rec[b"id"] for rec in records(
        r.execute_command("AMEM.SEM.RECALL", "kb", k, "TEXT", query, *extra))]


def test_store_by_text_and_recall_by_text(r: redis.Redis) -> None:
    fill(r)
    info = record(r.execute_command("AMEM.SEM.INFO", "kb"))
    assert info[b"dim"] == 256 and info[b"embedder"] == b"wordllama"
    assert recall_ids(r, 1, "when can I get breakfast at the cafeteria") == [b"cafe"]
    assert recall_ids(r, 1, "where should a visitor leave the car, which garage") == [b"parking"]
    assert recall_ids(r, 1, "fix the VAT on my invoice") == [b"vat"]
    hits = records(r.execute_command("AMEM.SEM.RECALL", "kb", 4, "TEXT", "refund to my card"))
    sims = [float(h[b"similarity"]) for h in hits]
    assert hits[0][b"id"] == b"refund" and sims == sorted(sims, reverse=True)


def test_stored_vector_is_the_embedding_of_text_and_description(r: redis.Redis) -> None:
    r.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "wordllama")
    r.execute_command("AMEM.SEM.STORE", "kb", "a", "alpha beta")
    r.execute_command("AMEM.SEM.STORE", "kb", "b", "alpha beta", "DESCRIPTION", "gamma delta")
    r.execute_command("AMEM.SEM.STORE", "kb", "c", "alpha beta\n\ngamma delta")
    vec = {i: np.frombuffer(record(r.execute_command("AMEM.SEM.GET", "kb", i, "WITHVECTOR"))[b"vector"],
                            dtype="<f4") for i in "abc"}
    assert abs(float(np.linalg.norm(vec["a"])) - 1) < 1e-5
    assert np.allclose(vec["b"], vec["c"])  # text, blank line, description
    assert not np.allclose(vec["a"], vec["b"])


def test_explicit_vector_wins(r: redis.Redis) -> None:
    r.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "wordllama")
    mine = np.zeros(256, dtype="<f4")
    mine[7] = 1.0
    r.execute_command("AMEM.SEM.STORE", "kb", "m", "some text", "FP32", mine.tobytes(), "KIND", "note")
    got = record(r.execute_command("AMEM.SEM.GET", "kb", "m", "WITHVECTOR"))
    assert np.array_equal(np.frombuffer(got[b"vector"], dtype="<f4"), mine)
    assert got[b"kind"] == b"note"
    hit = records(r.execute_command("AMEM.SEM.RECALL", "kb", 1, "FP32", mine.tobytes()))[0]
    assert hit[b"id"] == b"m" and float(hit[b"similarity"]) > 0.999


def test_search_text_is_hybrid_with_the_embedded_query(r: redis.Redis) -> None:
    fill(r)
    hits = records(r.execute_command("AMEM.SEM.SEARCH", "kb", 2, "TEXT", "morning meal"))
    # no word of the query is in any fact, so only the embedding finds the cafeteria
    assert hits[0][b"id"] == b"cafe"
    assert float(hits[0][b"text_score"]) == 0 and float(hits[0][b"similarity"]) > 0


def test_options_and_nx_xx_with_text(r: redis.Redis) -> None:
    fill(r)
    assert r.execute_command("AMEM.SEM.STORE", "kb", "vat", "other", "NX") is None
    assert r.execute_command("AMEM.SEM.STORE", "kb", "new", "x y", "XX") is None
    assert r.execute_command("AMEM.SEM.STORE", "kb", "vat", FACTS["vat"], "XX", "KIND", "policy",
                             "CONFIDENCE", "0.5", "TTL", "100", "WITHCREATED") == 0
    assert recall_ids(r, 4, "invoice VAT", "KIND", "policy") == [b"vat"]


def test_errors_store_nothing_and_name_the_cause(r: redis.Redis) -> None:
    r.execute_command("AMEM.SEM.CREATE", "plain", 4)
    with pytest.raises(redis.ResponseError, match="DIM expected 4 values, got 0"):
        r.execute_command("AMEM.SEM.STORE", "plain", "a", "no vector here")  # as before
    with pytest.raises(redis.ResponseError, match="namespace 'plain' has none"):
        r.execute_command("AMEM.SEM.RECALL", "plain", 1, "TEXT", "hello")
    with pytest.raises(redis.ResponseError, match="unknown embedder 'nope'"):
        r.execute_command("AMEM.SEM.CREATE", "x", "EMBEDDER", "nope")
    with pytest.raises(redis.ResponseError, match="embedder 'wordllama' makes vectors of 256"):
        r.execute_command("AMEM.SEM.CREATE", "x", 128, "EMBEDDER", "wordllama")
    with pytest.raises(redis.ResponseError, match="needs dim, or EMBEDDER"):
        r.execute_command("AMEM.SEM.CREATE", "x", "METRIC", "L2")
    r.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "wordllama")
    with pytest.raises(redis.ResponseError, match="EMBEDDER"):
        r.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "other", "UPDATE")
    with pytest.raises(redis.ResponseError, match="DIM expected 256 values, got 2"):
        r.execute_command("AMEM.SEM.STORE", "kb", "e", "text", 1, 2)
    assert record(r.execute_command("AMEM.SEM.INFO", "kb"))[b"count"] == 0
    assert r.ping()


def test_inside_multi_a_text_not_cached_is_refused(r: redis.Redis) -> None:
    r.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "wordllama")
    r.execute_command("AMEM.SEM.STORE", "kb", "a", "cached words here")
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("AMEM.SEM.STORE", "kb", "b", "cached words here",  # in the cache
                         "WITHCREATED")
    pipe.execute_command("AMEM.SEM.STORE", "kb", "c", "never seen before text")
    replies = pipe.execute(raise_on_error=False)
    assert replies[0] == 1
    assert isinstance(replies[1], redis.ResponseError) and "MULTI/EXEC" in str(replies[1])
    assert r.execute_command("AMEM.SEM.GET", "kb", "c") is None


def test_pipelined_stores_by_text_keep_their_order(r: redis.Redis) -> None:
    """The stores held behind the first one's deferred reply are embedded ahead (in
    batches, while the client waits); each still stores the vector of its own text."""
    from hotkv_server.embedding.wordllama import WordLlamaEmbedder

    r.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "wordllama")
    tag = time.time_ns()  # texts no earlier run put in the cache
    texts = [f"fact number {i} about topic {i % 7} run {tag}" for i in range(200)]
    before = r.info("amem")
    pipe = r.pipeline(transaction=False)
    for i, text in enumerate(texts):
        pipe.execute_command("AMEM.SEM.STORE", "kb", f"f{i}", text, "WITHCREATED", *(
            ("DESCRIPTION", "with a description") if i % 5 == 0 else ()))
        pipe.incr("n")
    replies = pipe.execute()
    assert replies[0::2] == [1] * 200
    assert replies[1::2] == list(range(1, 201))
    assert record(r.execute_command("AMEM.SEM.INFO", "kb"))[b"count"] == 200
    after = r.info("amem")
    assert after["embed_ahead"] > before["embed_ahead"]  # embedded while held
    assert after["embed_cache_misses"] - before["embed_cache_misses"] == 200  # each once
    assert after["embed_cache_hits"] == before["embed_cache_hits"]
    local = WordLlamaEmbedder()
    for i in (0, 1, 5, 77, 199):
        text = texts[i] + ("\n\nwith a description" if i % 5 == 0 else "")
        got = record(r.execute_command("AMEM.SEM.GET", "kb", f"f{i}", "WITHVECTOR"))[b"vector"]
        assert np.allclose(np.frombuffer(got, dtype="<f4"), local.embed([text])[0], atol=1e-6)


def test_cache_counters_in_info_amem(r: redis.Redis) -> None:
    r.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "wordllama")
    text = f"a text for the cache test {time.time_ns()}"  # the cache outlives FLUSHALL
    before = r.info("amem")
    r.execute_command("AMEM.SEM.STORE", "kb", "a", text)
    r.execute_command("AMEM.SEM.RECALL", "kb", 1, "TEXT", text)
    after = r.info("amem")
    assert after["embed_cache_misses"] == before["embed_cache_misses"] + 1
    assert after["embed_cache_hits"] == before["embed_cache_hits"] + 1
    assert after["embed_wordllama_dim"] == 256
    assert "wordllama" in str(after["embed_embedders"])


def test_other_clients_are_served_while_a_bulk_store_embeds(offline_server: HotkvProcess) -> None:
    r = offline_server.client()
    r.execute_command("FLUSHALL")
    r.execute_command("CONFIG", "SET", "embed-cache-max-memory", "0")  # every store embeds
    r.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "wordllama")
    r.set("k", "v")
    stop = threading.Event()

    def bulk() -> None:
        writer = offline_server.client()
        i = 0
        while not stop.is_set():
            pipe = writer.pipeline(transaction=False)
            for _ in range(100):
                pipe.execute_command("AMEM.SEM.STORE", "kb", f"f{i}", f"a long fact {i} " * 20)
                i += 1
            pipe.execute()

    thread = threading.Thread(target=bulk)
    thread.start()
    try:
        time.sleep(0.3)
        worst = 0.0
        for _ in range(200):
            started = time.perf_counter()
            assert r.get("k") == b"v"
            worst = max(worst, time.perf_counter() - started)
        assert worst < 2.0  # never held behind the embedding (typically well under 10 ms; the
        # bound is for a loaded machine: the slow-endpoint test in test_http_embedder.py is
        # the one that tells a held loop apart)
    finally:
        stop.set()
        thread.join()
        r.execute_command("CONFIG", "SET", "embed-cache-max-memory", "64mb")
    assert record(r.execute_command("AMEM.SEM.INFO", "kb"))[b"count"] >= 100


def test_redis_cli_offline_store_and_recall(offline_server: HotkvProcess) -> None:
    cli = require_tool("redis-cli")
    offline_server.client().execute_command("FLUSHALL")

    def run(*args: str) -> str:
        return subprocess.run([cli, "-p", str(offline_server.port), *args], capture_output=True,
                              text=True, check=True, timeout=30).stdout

    assert run("AMEM.SEM.CREATE", "kb", "EMBEDDER", "wordllama").strip() == "OK"
    assert run("AMEM.SEM.STORE", "kb", "f1", FACTS["vat"]).strip() == "OK"
    assert run("AMEM.SEM.STORE", "kb", "f2", FACTS["cafe"]).strip() == "OK"
    out = run("AMEM.SEM.RECALL", "kb", "1", "TEXT", "correct the VAT number on an invoice")
    assert out.splitlines()[:2] == ["id", "f1"]


def test_store_by_text_replays_without_an_embedder(tmp_path: object) -> None:
    data = tempfile.mkdtemp(prefix="hotkv-embed-replay-")
    first = HotkvProcess("--appendonly", "yes", dir=data).start()
    try:
        c = first.client()
        c.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "wordllama")
        for ident, text in FACTS.items():
            c.execute_command("AMEM.SEM.STORE", "kb", ident, text)
        stored = {i: record(c.execute_command("AMEM.SEM.GET", "kb", i, "WITHVECTOR"))[b"vector"]
                  for i in FACTS}
        c.close()
    finally:
        first.stop()
    second = HotkvProcess("--appendonly", "yes", "--embed-wordllama", "no", dir=data).start()
    try:
        c = second.client()
        assert "embed_wordllama_dim" not in c.info("amem")  # no embedder in this process
        info = record(c.execute_command("AMEM.SEM.INFO", "kb"))
        assert info[b"count"] == len(FACTS) and info[b"embedder"] == b"wordllama"
        for ident, blob in stored.items():
            got = record(c.execute_command("AMEM.SEM.GET", "kb", ident, "WITHVECTOR"))
            assert got[b"vector"] == blob
        hit = records(c.execute_command("AMEM.SEM.RECALL", "kb", 1, "FP32", stored["cafe"]))[0]
        assert hit[b"id"] == b"cafe"
        with pytest.raises(redis.ResponseError,
                           match="embedder 'wordllama' is not configured on this server"):
            c.execute_command("AMEM.SEM.STORE", "kb", "new", "some text")
        c.execute_command("AMEM.SEM.STORE", "kb", "new", "some text", "FP32", stored["vat"])
        assert record(c.execute_command("AMEM.SEM.INFO", "kb"))[b"count"] == len(FACTS) + 1
    finally:
        second.cleanup()



def fill_agent(r: redis.Redis) -> None:
    r.execute_command("AMEM.SEM.CREATE", "bot", "EMBEDDER", "wordllama")
    r.execute_command("AMEM.SEM.STORE", "bot", "f1", "refund the payment")
    r.execute_command("AMEM.SEM.STORE", "bot", "f2", "the cafeteria serves breakfast")
    r.execute_command("AMEM.EPIS.LOG", "bot", "action", "approved the refund of the customer's payment")
    r.execute_command("AMEM.EPIS.LOG", "bot", "action", "the weather in Berlin is sunny and warm")
    r.execute_command("AMEM.WORK.SET", "bot", "plan", "give the customer their money back")


def test_amem_search_by_text_embeds_the_query_events_and_notes(r: redis.Redis) -> None:
    fill_agent(r)
    hits = records(r.execute_command("AMEM.SEARCH", "bot", 10, "TEXT", "refund the payment"))
    assert {h[b"source"] for h in hits} == {b"semantic", b"episodic", b"working"}
    texts = [h[b"text"] for h in hits]
    assert texts[0] == b"refund the payment"  # the fact of the very same text: cosine 1
    refund = texts.index(b"approved the refund of the customer's payment")
    weather = [i for i, t in enumerate(texts) if t.startswith(b"the weather")]
    assert not weather or weather[0] > refund  # by meaning: the refund event ranks higher
    similarities = [float(h[b"similarity"]) for h in hits]
    assert similarities == sorted(similarities, reverse=True)
    assert records(r.execute_command("AMEM.SEARCH", "bot", 2, "TEXT", "refund the payment")) == hits[:2]


def test_amem_search_with_a_vector_on_an_embedder_namespace(r: redis.Redis) -> None:
    """A vector given explicitly is the query; events and notes are still embedded."""
    fill_agent(r)
    stored = records(r.execute_command("AMEM.SEM.RECALL", "bot", 1, "TEXT", "refund the payment",
                                       "WITHVECTORS"))
    blob = stored[0][b"vector"]
    assert isinstance(blob, bytes) and len(blob) == 4 * 256
    by_vector = records(r.execute_command("AMEM.SEARCH", "bot", 10, "FP32", blob))
    by_text = records(r.execute_command("AMEM.SEARCH", "bot", 10, "TEXT", "refund the payment"))
    assert [h[b"text"] for h in by_vector] == [h[b"text"] for h in by_text]
    assert {h[b"source"] for h in by_vector} == {b"semantic", b"episodic", b"working"}


def test_amem_search_text_alone_without_an_embedder(r: redis.Redis) -> None:
    """No namespace: the log and the notes are searched by TEXT's terms; a namespace without
    an embedder needs the vector (its facts cannot be found by text alone)."""
    r.execute_command("AMEM.EPIS.LOG", "plain", "action", "approved the refund for order 7")
    hits = records(r.execute_command("AMEM.SEARCH", "plain", 5, "TEXT", "refund order"))
    assert [(h[b"source"], float(h[b"similarity"])) for h in hits] == [(b"episodic", 1.0)]
    bad = r"^invalid vector 'nope': expected FP32 blob, v1 \.\.\. vdim or TEXT query$"
    with pytest.raises(redis.ResponseError, match=bad):
        r.execute_command("AMEM.SEARCH", "plain", 5, "nope")
    r.execute_command("AMEM.SEM.CREATE", "plain", 3)
    with pytest.raises(redis.ResponseError, match=r"^DIM expected 3 values, got 0$"):
        r.execute_command("AMEM.SEARCH", "plain", 5, "nope")
    with pytest.raises(redis.ResponseError, match="an embedder: namespace 'plain' has none"):
        r.execute_command("AMEM.SEARCH", "plain", 5, "TEXT", "refund order")
