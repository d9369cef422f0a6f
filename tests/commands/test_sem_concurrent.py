"""AMEM.SEM.RECALL searching off the event loop: order, consistency and writes meanwhile.

A RECALL's HNSW search runs on a small thread pool and its reply is a Deferred; these
tests drive that path through a real server, in RESP2 and RESP3, with several clients.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
import redis

from helpers import records

DIM = 64
FACTS = 3000


def fp32(values: Any) -> bytes:
    return np.asarray(values, dtype="<f4").tobytes()


def fill(r: redis.Redis, ns: str, vectors: np.ndarray, start: int = 0) -> None:
    pipe = r.pipeline(transaction=False)
    for i, vec in enumerate(vectors, start):
        pipe.execute_command("AMEM.SEM.STORE", ns, f"f{i}", f"fact {i}", "FP32", fp32(vec))
    pipe.execute()


@pytest.fixture
def vectors() -> np.ndarray:
    return np.random.default_rng(5).standard_normal((FACTS, DIM)).astype(np.float32)


def check_hits(reply: Any, k: int) -> list[bytes]:
    """A RECALL reply: at most k records, similarity never increasing; their ids."""
    recs = records(reply)
    assert len(recs) <= k
    sims = [float(rec[b"similarity"]) for rec in recs]
    assert sims == sorted(sims, reverse=True)
    for rec in recs:
        assert rec[b"text"] == b"fact " + rec[b"id"][1:]
    return [rec[b"id"] for rec in recs]


def test_pipelined_recall_then_get_keep_their_order(r: redis.Redis, vectors: np.ndarray) -> None:
    r.execute_command("AMEM.SEM.CREATE", "kb", DIM)
    fill(r, "kb", vectors)
    r.set("plain", "value")
    pipe = r.pipeline(transaction=False)
    for i in range(20):
        pipe.execute_command("AMEM.SEM.RECALL", "kb", 5, "FP32", fp32(vectors[i]))
        pipe.get("plain")
        pipe.execute_command("AMEM.SEM.RECALL", "kb", 1, "FP32", fp32(vectors[i + 100]))
        pipe.incr("counter")
    replies = pipe.execute()
    for i in range(20):
        first, got, nearest, count = replies[4 * i: 4 * i + 4]
        assert check_hits(first, 5)[0] == f"f{i}".encode()  # itself first
        assert got == b"value"
        assert check_hits(nearest, 1) == [f"f{i + 100}".encode()]
        assert count == i + 1


def test_recall_inside_multi_runs_in_place(r: redis.Redis, vectors: np.ndarray) -> None:
    r.execute_command("AMEM.SEM.CREATE", "kb", DIM)
    fill(r, "kb", vectors[:500])
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("AMEM.SEM.RECALL", "kb", 3, "FP32", fp32(vectors[7]))
    pipe.execute_command("AMEM.SEM.DEL", "kb", "f7")
    pipe.execute_command("AMEM.SEM.RECALL", "kb", 3, "FP32", fp32(vectors[7]))
    before, deleted, after = pipe.execute()
    assert check_hits(before, 3)[0] == b"f7"
    assert deleted == 1
    assert b"f7" not in check_hits(after, 3)
    assert len(records(after)) == 3


def test_recall_after_a_write_in_the_same_pipeline_sees_it(
    r: redis.Redis, vectors: np.ndarray
) -> None:
    r.execute_command("AMEM.SEM.CREATE", "kb", DIM)
    fill(r, "kb", vectors[:1000])
    pipe = r.pipeline(transaction=False)
    pipe.execute_command("AMEM.SEM.RECALL", "kb", 1, "FP32", fp32(vectors[2000]))
    pipe.execute_command("AMEM.SEM.STORE", "kb", "new", "fact w", "FP32", fp32(vectors[2000]),
                         "WITHCREATED")
    pipe.execute_command("AMEM.SEM.RECALL", "kb", 1, "FP32", fp32(vectors[2000]))
    pipe.execute_command("AMEM.SEM.DEL", "kb", "new")
    pipe.execute_command("AMEM.SEM.RECALL", "kb", 1, "FP32", fp32(vectors[2000]))
    before, stored, during, deleted, after = pipe.execute()
    assert [rec[b"id"] for rec in records(before)] != [b"new"]
    assert stored == 1 and deleted == 1
    assert [rec[b"id"] for rec in records(during)] == [b"new"]
    assert [rec[b"id"] for rec in records(after)] == [rec[b"id"] for rec in records(before)]


def test_concurrent_recalls_while_another_client_writes_and_drops(
    server: Any, r: redis.Redis, vectors: np.ndarray
) -> None:
    r.execute_command("AMEM.SEM.CREATE", "kb", DIM)
    fill(r, "kb", vectors)
    stop = threading.Event()
    problems: list[str] = []
    done = [0] * 4

    def reader(n: int) -> None:
        client = server.client(protocol=2 if n % 2 else 3)
        rng = np.random.default_rng(n)
        try:
            while not stop.is_set():
                i = int(rng.integers(FACTS))
                pipe = client.pipeline(transaction=False)
                pipe.execute_command("AMEM.SEM.RECALL", "kb", 10, "FP32", fp32(vectors[i]))
                pipe.echo(f"after {i}")
                pipe.execute_command("AMEM.SEM.RECALL", "kb", 4, "FP32", fp32(vectors[i]),
                                     "KIND", "fact", "MINSIM", 0.1)
                replies = pipe.execute(raise_on_error=False)
                if replies[1] != f"after {i}".encode():
                    problems.append(f"order: {replies[1]!r}")
                for reply, k in ((replies[0], 10), (replies[2], 4)):
                    if isinstance(reply, redis.ResponseError):
                        if "NOTFOUND" not in str(reply):  # dropped meanwhile: fine
                            problems.append(f"error: {reply}")
                        continue
                    check_hits(reply, k)
                done[n] += 1
        except Exception as exc:  # reported below
            problems.append(f"reader {n}: {type(exc).__name__}: {exc}")
        finally:
            client.close()

    threads = [threading.Thread(target=reader, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    writer = server.client()
    rng = np.random.default_rng(99)
    try:
        for round_ in range(6):
            for _ in range(40):
                i = int(rng.integers(FACTS))
                writer.execute_command("AMEM.SEM.STORE", "kb", f"f{i}", f"fact {i}", "FP32",
                                       fp32(rng.standard_normal(DIM)))
                writer.execute_command("AMEM.SEM.DEL", "kb", f"f{int(rng.integers(FACTS))}")
            if round_ % 2 == 1:
                assert writer.execute_command("AMEM.SEM.DROP", "kb") == 1
                writer.execute_command("AMEM.SEM.CREATE", "kb", DIM)
                fill(writer, "kb", vectors[:1500])
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert not problems, problems[:5]
    assert all(done), done
    assert writer.ping()
    # what is left answers as an in-place (EXACT) search would
    for i in range(5):
        query = fp32(vectors[i])
        hnsw = writer.execute_command("AMEM.SEM.RECALL", "kb", 3, "FP32", query)
        exact = writer.execute_command("AMEM.SEM.RECALL", "kb", 3, "FP32", query, "EXACT")
        assert check_hits(hnsw, 3)[0] == check_hits(exact, 3)[0]
    writer.close()


def test_recall_on_a_namespace_flushed_meanwhile_is_empty_or_notfound(
    server: Any, r: redis.Redis, vectors: np.ndarray
) -> None:
    r.execute_command("AMEM.SEM.CREATE", "kb", DIM)
    fill(r, "kb", vectors)
    other = server.client()
    commands = [("AMEM.SEM.RECALL", "kb", 10, "FP32", fp32(vectors[i])) for i in range(30)]
    # sent, not read yet: the flush races the searches
    conn = r.connection_pool.get_connection()
    conn.send_packed_command(conn.pack_commands(commands))
    other.flushall()
    for _ in range(30):
        try:
            reply = conn.read_response()
        except redis.ResponseError as exc:
            assert "NOTFOUND" in str(exc)
            continue
        check_hits(reply, 10)
    r.connection_pool.release(conn)
    assert other.ping()
    other.close()


def test_search_service_runs_searches_and_closes() -> None:
    """The server subsystem that owns the search threads: they start on first use; close()
    cancels the searches not started, waits for the running one, and refuses new ones
    (RECALL then searches in place)."""
    from hotkv_server.commands.sem_service import SemanticService
    from hotkv_server.engine.core import Core

    service = SemanticService(Core(), threads=1)
    assert service._pool is None  # no threads until a search needs one
    assert service.submit(lambda: None) is not None
    release = threading.Event()
    running = threading.Event()

    def blocked() -> None:
        running.set()
        release.wait(10)

    first = service.submit(blocked)
    queued = service.submit(lambda: None)
    assert first is not None and queued is not None
    assert running.wait(10)
    closer = threading.Thread(target=service.close)
    closer.start()
    closer.join(0.2)
    assert closer.is_alive()  # waiting for the running search
    assert service.submit(lambda: None) is None
    release.set()
    closer.join(10)
    assert not closer.is_alive()
    assert first.done() and not first.cancelled()
    assert queued.cancelled()
    service.close()  # twice is harmless


def test_blas_is_held_to_one_thread() -> None:
    """numpy's OpenBLAS threads spin after every product; the server holds them to one."""
    from hotkv_server.server.blas import limit_blas_threads, loaded_openblas

    libs = loaded_openblas()
    assert libs, ("no OpenBLAS is mapped into this process: numpy from pip bundles one "
                  "(scipy-openblas), so this numpy is not the one the test command installs")
    assert limit_blas_threads(1), (
        "OpenBLAS is loaded but exports none of hotkv_server.server.blas._OPENBLAS_SET_THREADS")
    counts = []
    for lib in libs:
        for name in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads"):
            getter = getattr(lib, name, None)
            if getter is not None:
                counts.append(getter())
                break
    assert counts and set(counts) == {1}
