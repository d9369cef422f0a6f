"""Embedding vectors on the wire: a list or numpy array <-> the FP32 blob the server takes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

#: what the client accepts as a vector: numbers, a numpy array, or a ready FP32 blob
VectorT: TypeAlias = Sequence[float] | npt.NDArray[Any] | bytes | bytearray | memoryview


def to_fp32(vector: VectorT) -> bytes:
    """The little-endian float32 blob of ``vector`` (a blob is passed through as it is)."""
    if isinstance(vector, bytes | bytearray | memoryview):
        return bytes(vector)
    array = np.asarray(vector, dtype="<f4")
    if array.ndim != 1:
        raise ValueError(f"a vector must be one-dimensional, got shape {array.shape}")
    return array.tobytes()


def from_fp32(blob: bytes) -> list[float]:
    """An FP32 blob (``vector`` in a fact record) -> a list of floats."""
    return [float(x) for x in np.frombuffer(blob, dtype="<f4")]
