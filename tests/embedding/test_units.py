"""The embedding cache and worker pool as plain objects, with real (tiny) embedders."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from hotkv_server.embedding.base import Embedder, EmbeddingError
from hotkv_server.embedding.cache import ENTRY_OVERHEAD, EmbeddingCache
from hotkv_server.embedding.pool import EmbeddingPool


class CountingEmbedder(Embedder):
    """Vectors from the text's length; records the batches it was called with."""

    name = "counting"
    batch_size = 4

    def __init__(self, gate: threading.Event | None = None, fail: bool = False) -> None:
        self.batches: list[list[str]] = []
        self.gate = gate
        self.fail = fail

    @property
    def dim(self) -> int:
        return 2

    @property
    def model(self) -> str:
        return "counting/2"

    def embed(self, texts: list[str]) -> np.ndarray:
        if self.gate is not None:
            self.gate.wait(5)
        self.batches.append(list(texts))
        if self.fail:
            raise ConnectionError("model went away")
        return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)


def test_cache_is_bounded_lru_with_counters() -> None:
    vec = b"\x00" * 8
    cost = 1 + len(vec) + ENTRY_OVERHEAD
    cache = EmbeddingCache(3 * cost)
    for text in (b"a", b"b", b"c"):
        cache.put("m", text, vec)
    assert cache.get("m", b"a") == vec  # a is now the most recent
    cache.put("m", b"d", vec)  # evicts b, the least recently used
    assert cache.get("m", b"b") is None
    assert cache.get("other-model", b"a") is None  # keyed by model too
    assert (cache.hits, cache.misses, cache.evictions, len(cache)) == (1, 2, 1, 3)
    cache.resize(0)
    assert len(cache) == 0 and cache.bytes == 0
    cache.put("m", b"e", vec)
    assert len(cache) == 0  # 0 turns it off


def test_pool_batches_queued_requests_and_keeps_order() -> None:
    gate = threading.Event()
    embedder = CountingEmbedder(gate)
    pool = EmbeddingPool(threads=1)
    futures = [pool.submit(embedder, [f"t{i}" * (i + 1)]) for i in range(9)]
    gate.set()
    results = [f.result(5) for f in futures]
    for i, vectors in enumerate(results):
        assert vectors.shape == (1, 2) and vectors[0, 0] == 2 * (i + 1)
    # the first call took one text, the rest waited and went in batches of at most 4
    assert [len(b) for b in embedder.batches] == [1, 4, 4]
    assert pool.counters["counting"].texts == 9
    pool.close()


def test_pool_failure_names_the_embedder() -> None:
    pool = EmbeddingPool(threads=1)
    future = pool.submit(CountingEmbedder(fail=True), ["x"])
    with pytest.raises(EmbeddingError, match="embedder 'counting' failed: model went away"):
        future.result(5)
    assert pool.counters["counting"].errors == 1
    pool.close()
    closed = pool.submit(CountingEmbedder(), ["x"])
    with pytest.raises(EmbeddingError, match="shutting down"):
        closed.result(1)


def test_wordllama_loads_with_every_connection_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from hotkv_server.embedding.wordllama import WordLlamaEmbedder

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("network unreachable (test)")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    embedder = WordLlamaEmbedder(128)
    vectors = embedder.embed(["the model is in the wheel", "no download needed"])
    assert vectors.shape == (2, 128)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.model == "wordllama/l2_supercat/128"


def test_store_by_text_in_process_records_the_vector_in_its_effect() -> None:
    """A Core driven without an event loop embeds in place; the effect handed to the
    sinks (the AOF, the replicas) holds the vector, and applying that effect to a second
    database with no embedder gives the same fact."""
    from hotkv_server.commands import load_all
    from hotkv_server.embedding.service import EmbeddingService
    from hotkv_server.engine.context import Context
    from hotkv_server.engine.core import Core
    from hotkv_server.engine.dispatch import dispatch
    from hotkv_server.stores.database import default_database
    from hotkv_server.stores.effect import pack, unpack

    load_all()
    core = Core()
    core.embed = EmbeddingService(core)
    seen: list[object] = []
    core.effects.set_observer(seen.append, True)
    ctx = Context(core)
    assert dispatch(ctx, [b"AMEM.SEM.CREATE", b"kb", b"EMBEDDER", b"wordllama"]) is not None
    assert dispatch(ctx, [b"AMEM.SEM.STORE", b"kb", b"a", b"tea in the lobby",
                           b"WITHCREATED"]) == 1
    store = seen[-1].wire()  # type: ignore[attr-defined]
    assert store[0] == "sem.store" and len(store[4]) == 4 * 256
    replica = default_database()
    for effect in seen:
        replica.apply(unpack(pack(effect.wire())))  # type: ignore[attr-defined]
    fact = replica.sem.get(b"kb").get(b"a", 0)
    assert fact is not None and replica.sem.get(b"kb").embedder == "wordllama"
    assert replica.sem.get(b"kb").vector(fact) == store[4]
