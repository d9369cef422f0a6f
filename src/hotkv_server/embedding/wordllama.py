"""The ``wordllama`` embedder: a static token-embedding model that ships inside the wheel.

The model (``l2_supercat``, 256 dimensions, its tokenizer beside it) is read from the
installed package's own folder and nothing else: the two files are opened by path
(safetensors and ``tokenizers.Tokenizer.from_file``) and handed to wordllama's inference
class, so no code path that could download runs (wordllama 0.4's own ``WordLlama.load``
looks for the tokenizer in a ``tokenizer/`` folder while the wheel ships ``tokenizers/``,
and would fall back to the network). A machine without a network, or with a stale
``~/.cache/wordllama``, loads exactly the packaged files or fails naming the missing one. A vector is the mean of the text's token vectors,
truncated to ``embed-wordllama-dim`` (64, 128 or 256 values; wordllama's matryoshka
training keeps a prefix meaningful) and normalised to length 1.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np

from hotkv_server.embedding.base import InProcessEmbedder

CONFIG_NAME = "l2_supercat"
STORED_DIM = 256
DIMS = (64, 128, 256)


def package_folder() -> Path | None:
    """The installed wordllama package's folder, or None when it is not installed."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def available() -> bool:
    return package_folder() is not None


class WordLlamaEmbedder(InProcessEmbedder):
    name = "wordllama"
    batch_size = 256

    def __init__(self, dim: int = STORED_DIM) -> None:
        if dim not in DIMS:
            raise ValueError(f"wordllama dimension must be one of {', '.join(map(str, DIMS))}")
        super().__init__(dim)

    @property
    def model(self) -> str:
        return f"wordllama/{CONFIG_NAME}/{self._dim}"

    def files(self) -> tuple[Path, Path]:
        """The weights and tokenizer files inside the installed package."""
        folder = package_folder()
        if folder is None:
            raise RuntimeError("the wordllama package is not installed (pip install 'hotkv[wordllama]')")
        weights = folder / "weights" / f"{CONFIG_NAME}_{STORED_DIM}.safetensors"
        tokenizer = folder / "tokenizers" / f"{CONFIG_NAME}_tokenizer_config.json"
        for path in (weights, tokenizer):
            if not path.is_file():
                raise RuntimeError(f"the wordllama package has no {path.name} in {path.parent}")
        return weights, tokenizer

    def open_model(self) -> Any:
        weights, tokenizer_file = self.files()
        from safetensors import safe_open
        from tokenizers import Tokenizer
        from wordllama.inference import WordLlamaInference

        with safe_open(str(weights), framework="np", device="cpu") as fh:
            table = fh.get_tensor("embedding.weight")[:, : self._dim]
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
        return WordLlamaInference(table, tokenizer)

    def embed(self, texts: list[str]) -> np.ndarray:
        model = self.loaded_model()
        vectors = np.asarray(model.embed(texts, norm=False, batch_size=self.batch_size),
                             dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        empty = np.flatnonzero(norms[:, 0] == 0)
        if len(empty):
            raise ValueError(f"text {int(empty[0]) + 1} of the batch has no token the model knows")
        vectors /= norms
        return vectors
