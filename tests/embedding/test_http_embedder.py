"""The ``openai`` embedder against a fake OpenAI-compatible endpoint the tests start.

The server process talks HTTP to :class:`fake_openai.FakeEmbeddings` running in this test
process: vectors in index order, the API key from an environment variable or a file,
batching, retries with backoff, and the failures (an endpoint down, answering errors,
too slow, wrong dimension) that must give one error line naming the embedder, store
nothing and leave the server serving other clients.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import redis

from embedding.fake_openai import FakeEmbeddings, text_vector
from helpers import HotkvProcess, free_port, record, records

DIM = 16


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeEmbeddings]:
    endpoint = FakeEmbeddings(DIM)
    try:
        yield endpoint
    finally:
        endpoint.close()


@pytest.fixture(scope="module")
def key_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("key") / "api-key"
    path.write_text("file-secret\n")
    return path


@pytest.fixture(scope="module")
def server(fake: FakeEmbeddings, key_file: Path) -> Iterator[HotkvProcess]:
    proc = HotkvProcess(
        "--embed-wordllama", "no",
        "--embed-openai-url", fake.url, "--embed-openai-model", "fake-embed-1",
        "--embed-openai-dim", str(DIM), "--embed-openai-api-key-file", str(key_file),
        "--embed-openai-batch-size", "8", "--embed-openai-timeout-ms", "2000",
        "--embed-openai-retries", "2", "--embed-openai-backoff-ms", "50",
        "--embed-timeout-ms", "10000",
    ).start()
    try:
        yield proc
    finally:
        proc.cleanup()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def r(request: pytest.FixtureRequest, server: HotkvProcess, fake: FakeEmbeddings) -> Iterator[redis.Redis]:
    client = server.client(protocol=request.param)
    client.execute_command("FLUSHALL")
    client.execute_command("CONFIG", "SET", "embed-cache-max-memory", "0")  # reach the endpoint
    fake.fail_next = 0
    fake.delay_s = 0.0
    fake.wrong_dim = False
    fake.api_key = None
    fake.requests.clear()
    try:
        yield client
    finally:
        client.close()


def vector_of(r: redis.Redis, ident: str) -> np.ndarray:
    got = record(r.execute_command("AMEM.SEM.GET", "kb", ident, "WITHVECTOR"))
    return np.frombuffer(got[b"vector"], dtype="<f4")


def test_store_and_recall_by_text_through_the_endpoint(r: redis.Redis, fake: FakeEmbeddings) -> None:
    r.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "openai")
    assert record(r.execute_command("AMEM.SEM.INFO", "kb"))[b"dim"] == DIM
    r.execute_command("AMEM.SEM.STORE", "kb", "a", "red apples grow on trees")
    r.execute_command("AMEM.SEM.STORE", "kb", "b", "blue whales swim in oceans")
    assert np.allclose(vector_of(r, "a"), text_vector("red apples grow on trees", DIM), atol=1e-6)
    hits = records(r.execute_command("AMEM.SEM.RECALL", "kb", 1, "TEXT", "whales oceans"))
    assert hits[0][b"id"] == b"b"
    texts, headers = fake.requests[0]
    assert texts == ["red apples grow on trees"]
    assert headers["authorization"] == "Bearer file-secret"  # the key file wins over the env


def test_api_key_from_the_environment(fake: FakeEmbeddings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOTKV_TEST_EMBED_KEY", "env-secret")
    proc = HotkvProcess("--embed-wordllama", "no", "--embed-openai-url", fake.url,
                        "--embed-openai-model", "m", "--embed-openai-dim", str(DIM),
                        "--embed-openai-api-key-env", "HOTKV_TEST_EMBED_KEY").start()
    try:
        c = proc.client()
        fake.api_key = "env-secret"
        c.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "openai")
        assert c.execute_command("AMEM.SEM.STORE", "kb", "a", "hello there", "WITHCREATED") == 1
        fake.api_key = "something-else"
        with pytest.raises(redis.ResponseError) as exc:
            c.execute_command("AMEM.SEM.STORE", "kb", "b", "another text")
        message = str(exc.value)
        assert "embedder 'openai' failed" in message and "HTTP 401" in message
        assert "Incorrect API key" in message and "env-secret" not in message
        assert c.execute_command("AMEM.SEM.GET", "kb", "b") is None
    finally:
        fake.api_key = None
        proc.cleanup()


def test_concurrent_stores_are_batched(server: HotkvProcess, r: redis.Redis, fake: FakeEmbeddings) -> None:
    r.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "openai")
    fake.delay_s = 0.05  # slow enough that requests queue behind the busy workers
    clients = [server.client() for _ in range(24)]
    threads = [threading.Thread(target=c.execute_command,
                                args=("AMEM.SEM.STORE", "kb", f"f{i}", f"text number {i}"))
               for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert record(r.execute_command("AMEM.SEM.INFO", "kb"))[b"count"] == 24
    assert fake.texts_seen() == 24
    assert len(fake.requests) < 24  # several texts per HTTP request
    assert max(len(texts) for texts, _ in fake.requests) <= 8  # embed-openai-batch-size
    for i in (0, 13, 23):
        assert np.allclose(vector_of(r, f"f{i}"), text_vector(f"text number {i}", DIM), atol=1e-6)
    for c in clients:
        c.close()


def test_retries_with_backoff_then_succeeds(r: redis.Redis, fake: FakeEmbeddings) -> None:
    r.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "openai")
    fake.fail_next = 2  # two 503s, retries 2: the third attempt answers
    started = time.monotonic()
    assert r.execute_command("AMEM.SEM.STORE", "kb", "a", "eventually stored", "WITHCREATED") == 1
    assert time.monotonic() - started >= 0.05 + 0.1  # backoff 50 ms, then 100 ms
    assert len(fake.requests) == 3
    assert r.info("amem")["embed_openai_errors"] >= 0


def test_failing_endpoint_gives_one_error_line_and_stores_nothing(r: redis.Redis, fake: FakeEmbeddings) -> None:
    r.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "openai")
    fake.fail_next = 10
    with pytest.raises(redis.ResponseError) as exc:
        r.execute_command("AMEM.SEM.STORE", "kb", "a", "never stored")
    message = str(exc.value)
    assert message.startswith("embedder 'openai' failed:") or "embedder 'openai' failed:" in message
    assert "HTTP 503" in message and "model overloaded" in message and "after 3 attempts" in message
    assert "\n" not in message
    assert r.execute_command("AMEM.SEM.GET", "kb", "a") is None
    fake.fail_next = 0
    fake.fail_status = 400
    fake.fail_next = 1
    with pytest.raises(redis.ResponseError, match="HTTP 400"):
        r.execute_command("AMEM.SEM.RECALL", "kb", 1, "TEXT", "not retried")
    assert fake.fail_next == 0 and len(fake.requests) == 4  # a 400 is not retried
    fake.fail_status = 503
    assert r.ping()


def test_wrong_dimension_from_the_endpoint(r: redis.Redis, fake: FakeEmbeddings) -> None:
    r.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "openai")
    fake.wrong_dim = True
    with pytest.raises(redis.ResponseError, match=f"vectors of {DIM + 1} values, expected {DIM}"):
        r.execute_command("AMEM.SEM.STORE", "kb", "a", "bad dims")
    assert record(r.execute_command("AMEM.SEM.INFO", "kb"))[b"count"] == 0


def test_slow_endpoint_times_out_and_the_server_stays_responsive(
        server: HotkvProcess, r: redis.Redis, fake: FakeEmbeddings) -> None:
    r.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "openai")
    r.execute_command("CONFIG", "SET", "embed-timeout-ms", "300")
    fake.delay_s = 1.0
    other = server.client()
    other.set("k", "v")
    outcome: dict[str, object] = {}

    def slow_store() -> None:
        try:
            outcome["reply"] = r.execute_command("AMEM.SEM.STORE", "kb", "a", "too slow")
        except redis.ResponseError as exc:
            outcome["error"] = str(exc)
        outcome["took"] = time.monotonic() - started

    started = time.monotonic()
    thread = threading.Thread(target=slow_store)
    thread.start()
    time.sleep(0.05)
    latencies = []
    for _ in range(20):
        t0 = time.monotonic()
        assert other.get("k") == b"v"
        latencies.append(time.monotonic() - t0)
    thread.join()
    r.execute_command("CONFIG", "SET", "embed-timeout-ms", "10000")
    assert max(latencies) < 0.2
    assert "embedder 'openai' failed: no vectors within 300 ms" in str(outcome.get("error"))
    assert 0.25 < float(outcome["took"]) < 0.9  # type: ignore[arg-type]
    time.sleep(1.0)  # the late answer arrives and must not be stored
    assert r.execute_command("AMEM.SEM.GET", "kb", "a") is None
    other.close()


def test_endpoint_down(r: redis.Redis) -> None:
    r.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "openai")
    old = r.config_get("embed-openai-url")["embed-openai-url"]
    r.execute_command("CONFIG", "SET", "embed-openai-url", f"http://127.0.0.1:{free_port()}/v1")
    r.execute_command("CONFIG", "SET", "embed-openai-retries", "0")
    try:
        with pytest.raises(redis.ResponseError, match="embedder 'openai' failed: cannot reach"):
            r.execute_command("AMEM.SEM.STORE", "kb", "a", "nobody listens")
    finally:
        r.execute_command("CONFIG", "SET", "embed-openai-url", old)
        r.execute_command("CONFIG", "SET", "embed-openai-retries", "2")
    assert r.execute_command("AMEM.SEM.STORE", "kb", "a", "back again", "WITHCREATED") == 1


def test_config_get_set_of_the_directives(r: redis.Redis) -> None:
    got = r.config_get("embed-openai-*")
    assert got["embed-openai-model"] == "fake-embed-1" and got["embed-openai-dim"] == str(DIM)
    assert got["embed-openai-batch-size"] == "8"
    r.execute_command("CONFIG", "SET", "embed-openai-batch-size", "4")
    assert r.config_get("embed-openai-batch-size")["embed-openai-batch-size"] == "4"
    r.execute_command("CONFIG", "SET", "embed-openai-batch-size", "8")
    with pytest.raises(redis.ResponseError, match="embed-openai-dim"):
        r.execute_command("CONFIG", "SET", "embed-openai-dim", "32")
    with pytest.raises(redis.ResponseError, match="embed-openai-batch-size"):
        r.execute_command("CONFIG", "SET", "embed-openai-batch-size", "0")


def test_a_half_configured_endpoint_stops_the_start() -> None:
    proc = HotkvProcess("--embed-openai-url", "http://127.0.0.1:1/v1")
    with pytest.raises(RuntimeError, match="embed-openai-model"):
        proc.start(timeout=10)
    proc.cleanup()


def test_key_never_in_info_or_config_rewrite_is_unaffected(r: redis.Redis) -> None:
    text = r.execute_command("INFO", "amem")
    blob = text if isinstance(text, (bytes, str)) else str(text)
    assert "file-secret" not in str(blob)
    assert os.environ.get("HOTKV_TEST_EMBED_KEY") is None


def test_shutdown_does_not_wait_for_a_hung_endpoint(fake: FakeEmbeddings) -> None:
    proc = HotkvProcess("--embed-wordllama", "no", "--embed-openai-url", fake.url,
                        "--embed-openai-model", "m", "--embed-openai-dim", str(DIM),
                        "--embed-openai-timeout-ms", "20000").start()
    fake.delay_s = 8.0
    try:
        c = proc.client()
        c.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "openai")
        waiting = threading.Thread(target=lambda: _swallow(c, "AMEM.SEM.STORE", "kb", "a", "hung"))
        waiting.start()
        time.sleep(0.3)  # the request is at the endpoint now
        started = time.monotonic()
        assert proc.stop(timeout=10) == 0
        assert time.monotonic() - started < 4
        waiting.join()
    finally:
        fake.delay_s = 0.0
        proc.cleanup()


def _swallow(c: redis.Redis, *args: str) -> None:
    try:
        c.execute_command(*args)
    except (redis.ResponseError, redis.ConnectionError):
        pass
