"""The ``fastembed`` embedder: an ONNX sentence-embedding model from a folder on disk.

fastembed cannot download anything for hotkv: the model is registered under a name of
its own (``hotkv-local/<folder name>``) and loaded with ``specific_model_path``, which
makes fastembed read the folder and skip its download code. The folder holds the ONNX
file (``embed-fastembed-model-file``, default ``model.onnx``), ``tokenizer.json``,
``tokenizer_config.json`` and, where the model has them, ``special_tokens_map.json`` and
``config.json`` (what a Hugging Face export writes). The graph takes ``input_ids`` (and
``attention_mask``/``token_type_ids`` if it declares them) and returns token vectors
that are pooled (``embed-fastembed-pooling`` mean or cls) and normalised to length 1.
The dimension is configured (``embed-fastembed-dim``) so namespaces can be created before
the model loads; the first batch checks it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from hotkv_server.embedding.base import InProcessEmbedder, as_vectors

REQUIRED_FILES = ("tokenizer.json", "tokenizer_config.json")
POOLINGS = ("mean", "cls")


def available() -> bool:
    import importlib.util

    return importlib.util.find_spec("fastembed") is not None


class FastEmbedEmbedder(InProcessEmbedder):
    name = "fastembed"
    batch_size = 64

    def __init__(self, path: str, dim: int, model_file: str = "model.onnx",
                 pooling: str = "mean", threads: int = 1) -> None:
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}")
        super().__init__(dim)
        self.path = Path(path)
        self.model_file = model_file
        self.pooling = pooling
        self.threads = threads

    @property
    def model(self) -> str:
        return f"fastembed/{self.path.name}/{self._dim}"

    def describe(self) -> dict[str, str | int]:
        return {"model": self.model, "dim": self.dim, "path": str(self.path)}

    def open_model(self) -> Any:
        if not available():
            raise RuntimeError("the fastembed package is not installed (pip install 'hotkv[fastembed]')")
        missing = [name for name in (self.model_file, *REQUIRED_FILES)
                   if not (self.path / name).is_file()]
        if missing:
            raise RuntimeError(f"{self.path} has no {', '.join(missing)}")
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType

        digest = hashlib.sha1(str(self.path.resolve()).encode()).hexdigest()[:8]
        model_name = f"hotkv-local/{self.path.name}-{digest}"
        try:
            TextEmbedding.add_custom_model(
                model=model_name,
                pooling=PoolingType.MEAN if self.pooling == "mean" else PoolingType.CLS,
                normalization=True,
                sources=ModelSource(hf=model_name),
                dim=self._dim,
                model_file=self.model_file,
            )
        except ValueError:
            pass  # registered by an earlier load in this process
        return TextEmbedding(
            model_name=model_name,
            specific_model_path=str(self.path),
            local_files_only=True,
            threads=self.threads,
            cuda=False,
        )

    def embed(self, texts: list[str]) -> np.ndarray:
        rows = list(self.loaded_model().embed(texts, batch_size=self.batch_size))
        vectors = as_vectors(np.stack(rows) if rows else np.zeros((0, self._dim)),
                             len(texts), self._dim)
        norms = np.linalg.norm(vectors, axis=1)
        if (norms == 0).any():
            raise ValueError(f"text {int(np.flatnonzero(norms == 0)[0]) + 1} embedded to a zero vector")
        return vectors
