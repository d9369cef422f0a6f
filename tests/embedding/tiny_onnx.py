"""A tiny ONNX sentence-embedding model folder, built here, for fastembed tests and benchmarks.

``model.onnx`` is a Gather from a word-vector table masked by ``attention_mask`` (the token
vectors a transformer would return); ``tokenizer.json`` a word-level tokenizer made with
``tokenizers``; plus ``tokenizer_config.json``, ``special_tokens_map.json`` and
``config.json``, as a Hugging Face export writes them.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

WORDS = ["red", "apples", "grow", "on", "trees", "blue", "whales", "swim", "in", "oceans",
         "fruit", "sea", "animals", "orchard"]


def build_model(folder: Path, dim: int = 8) -> np.ndarray:
    """Write the model folder; return the word-vector table (row per token id)."""
    vocab = {"[PAD]": 0, "[UNK]": 1} | {w: i + 2 for i, w in enumerate(WORDS)}
    table = np.random.default_rng(3).standard_normal((len(vocab), dim)).astype(np.float32)
    table[0] = 0.0
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"pad_token": "[PAD]", "unk_token": "[UNK]", "model_max_length": 64}))
    (folder / "special_tokens_map.json").write_text(json.dumps(
        {"pad_token": "[PAD]", "unk_token": "[UNK]"}))
    (folder / "config.json").write_text(json.dumps({"pad_token_id": 0}))

    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])
    mask = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])
    out = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                        ["batch", "seq", dim])
    nodes = [
        helper.make_node("Gather", ["table", "input_ids"], ["tokens"], axis=0),
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask_f", "last_axis"], ["mask_3d"]),
        helper.make_node("Mul", ["tokens", "mask_3d"], ["last_hidden_state"]),
    ]
    graph = helper.make_graph(
        nodes, "tiny-word-vectors", [ids, mask], [out],
        initializer=[numpy_helper.from_array(table, "table"),
                     numpy_helper.from_array(np.array([-1], dtype=np.int64), "last_axis")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / "model.onnx"))
    return table


def expected(table: np.ndarray, text: str) -> np.ndarray:
    """What fastembed must make of ``text``: the mean of its word vectors, normalised."""
    index = {w: i + 2 for i, w in enumerate(WORDS)}
    rows = [table[index.get(w, 1)] for w in text.lower().split()]
    vector = np.mean(rows, axis=0)
    return vector / np.linalg.norm(vector)
