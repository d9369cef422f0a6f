"""What every embedder is: a name, a dimension, a model id, and ``embed(texts)``.

``embed`` runs on a worker thread of :class:`hotkv_server.embedding.pool.EmbeddingPool`,
never on the event loop; it may block (an HTTP call) and may raise anything. The pool
turns any exception into an :class:`EmbeddingError` naming the embedder and the cause,
which the command answers as one error line.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

_VECTOR_DTYPE = np.dtype("<f4")


class EmbeddingError(Exception):
    """An embedding that could not be made; ``str()`` is the one-line reply text."""

    def __init__(self, embedder: str, cause: str) -> None:
        super().__init__(f"ERR embedder '{embedder}' failed: {cause}")
        self.embedder = embedder
        self.cause = cause


class Embedder(ABC):
    """One configured embedding model."""

    #: the name namespaces are bound to (``AMEM.SEM.CREATE ... EMBEDDER name``)
    name: str
    #: texts per call of :meth:`embed` (the pool batches queued requests up to this)
    batch_size: int = 64

    @property
    @abstractmethod
    def dim(self) -> int:
        """Length of every vector :meth:`embed` returns."""

    @property
    @abstractmethod
    def model(self) -> str:
        """What the vectors come from (model name and dimension): part of the cache key,
        so a changed model never answers from vectors of the old one."""

    def load(self) -> None:  # noqa: B027 (most embedders load lazily; none must)
        """Load the model (on a worker thread, before the first batch); idempotent."""

    @abstractmethod
    def embed(self, texts: list[str]) -> np.ndarray:
        """``len(texts) x dim`` float32 vectors, one per text, in order."""

    def describe(self) -> dict[str, str | int]:
        """INFO and the docs: what this embedder is configured as."""
        return {"model": self.model, "dim": self.dim}


class InProcessEmbedder(Embedder):
    """An embedder whose model runs in this process (wordllama, fastembed): a fixed
    dimension, and the model opened once, by whichever worker thread needs it first."""

    def __init__(self, dim: int) -> None:
        self._dim = dim
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        return self._dim

    @abstractmethod
    def open_model(self) -> Any:
        """Open the model (its files only: nothing downloads); raise naming what is missing."""

    def load(self) -> None:
        with self._lock:
            if self._model is None:
                self._model = self.open_model()

    def loaded_model(self) -> Any:
        if self._model is None:
            self.load()
        return self._model


def as_vectors(raw: object, count: int, dim: int) -> np.ndarray:
    """Check an embedder's output: ``count x dim`` finite float32, else ValueError."""
    array = np.asarray(raw, dtype=np.float32)
    if array.ndim != 2 or array.shape[0] != count:
        raise ValueError(f"returned {array.shape[0] if array.ndim else 0} vectors for {count} texts")
    if array.shape[1] != dim:
        raise ValueError(f"returned vectors of {array.shape[1]} values, expected {dim}")
    if not np.isfinite(array).all():
        raise ValueError("returned a vector with NaN or infinite values")
    return array


def to_blob(vector: np.ndarray) -> bytes:
    """One vector as the FP32 little-endian bytes effects carry."""
    return np.ascontiguousarray(vector, dtype=_VECTOR_DTYPE).tobytes()
