"""The ``fastembed`` embedder on a tiny ONNX model this test builds (no download anywhere).

The model folder is what a Hugging Face export holds: ``model.onnx`` (a Gather from a
word-vector table, masked by ``attention_mask``: the token vectors a transformer would
return), ``tokenizer.json`` (a word-level tokenizer made with ``tokenizers``),
``tokenizer_config.json``, ``special_tokens_map.json`` and ``config.json``. The server
loads it through fastembed and onnxruntime; the stored vector must be the mean of the
text's word vectors, normalised, which the test computes with numpy on its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import redis

from embedding.tiny_onnx import build_model, expected
from helpers import HotkvProcess, record, records

DIM = 8


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    folder = tmp_path_factory.mktemp("tiny-model")
    return folder, build_model(folder, DIM)


@pytest.fixture(scope="module")
def server(model: tuple[Path, np.ndarray], tmp_path_factory: pytest.TempPathFactory,
           ) -> Iterator[HotkvProcess]:
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    mp.setenv("FASTEMBED_CACHE_PATH", str(tmp_path_factory.mktemp("no-cache")))
    try:
        proc = HotkvProcess("--embed-wordllama", "no", "--embed-fastembed-path", str(model[0]),
                            "--embed-fastembed-dim", str(DIM)).start()
    finally:
        mp.undo()
    try:
        yield proc
    finally:
        proc.cleanup()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def r(request: pytest.FixtureRequest, server: HotkvProcess) -> Iterator[redis.Redis]:
    client = server.client(protocol=request.param)
    client.execute_command("FLUSHALL")
    try:
        yield client
    finally:
        client.close()


def test_store_and_recall_through_the_onnx_model(r: redis.Redis,
                                                  model: tuple[Path, np.ndarray]) -> None:
    _, table = model
    r.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "fastembed")
    assert record(r.execute_command("AMEM.SEM.INFO", "kb"))[b"dim"] == DIM
    r.execute_command("AMEM.SEM.STORE", "kb", "a", "red apples grow on trees")
    r.execute_command("AMEM.SEM.STORE", "kb", "b", "blue whales swim in oceans")
    got = np.frombuffer(record(r.execute_command("AMEM.SEM.GET", "kb", "a", "WITHVECTOR"))[b"vector"],
                        dtype="<f4")
    assert np.allclose(got, expected(table, "red apples grow on trees"), atol=1e-5)
    hits = records(r.execute_command("AMEM.SEM.RECALL", "kb", 2, "TEXT", "whales swim"))
    assert next(h[b"id"] for h in hits) == b"b"
    assert r.info("amem")["embed_fastembed_texts"] >= 3


def test_a_model_folder_missing_files_names_them(model: tuple[Path, np.ndarray],
                                                  tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes((model[0] / "model.onnx").read_bytes())
    proc = HotkvProcess("--embed-wordllama", "no", "--embed-fastembed-path", str(tmp_path),
                        "--embed-fastembed-dim", str(DIM)).start()
    try:
        c = proc.client()
        c.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "fastembed")
        with pytest.raises(redis.ResponseError) as exc:
            c.execute_command("AMEM.SEM.STORE", "kb", "a", "red apples")
        assert "embedder 'fastembed' failed" in str(exc.value)
        assert "tokenizer.json, tokenizer_config.json" in str(exc.value)
        assert c.ping()
    finally:
        proc.cleanup()


def test_a_wrong_configured_dimension_is_caught_at_the_first_batch(
        model: tuple[Path, np.ndarray]) -> None:
    proc = HotkvProcess("--embed-wordllama", "no", "--embed-fastembed-path", str(model[0]),
                        "--embed-fastembed-dim", str(DIM * 2)).start()
    try:
        c = proc.client()
        c.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "fastembed")
        with pytest.raises(redis.ResponseError, match=f"vectors of {DIM} values, expected {DIM * 2}"):
            c.execute_command("AMEM.SEM.STORE", "kb", "a", "red apples")
    finally:
        proc.cleanup()
