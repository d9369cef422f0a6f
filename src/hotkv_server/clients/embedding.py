"""A small deterministic text embedding for when no embedding model is at hand.

Feature hashing of lower-cased words and word pairs into ``dim`` signed buckets, then
L2-normalised: texts that share words get a high cosine similarity. It knows nothing of
meaning (``car`` and ``automobile`` are unrelated to it), so it is a fallback: the MCP
server uses it for facts an assistant stores without an embedding, and tests use it as a
reproducible ``embed``. Real deployments pass vectors from their own model.
"""

from __future__ import annotations

import hashlib
import re
from itertools import pairwise

import numpy as np
import numpy.typing as npt

DEFAULT_DIM = 256

_WORD = re.compile(r"[0-9a-z]+")


def _bucket(token: str, dim: int) -> tuple[int, float]:
    digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dim, (1.0 if value >> 63 else -1.0)


def hashed_embedding(text: str, dim: int = DEFAULT_DIM) -> npt.NDArray[np.float32]:
    """A unit vector of ``dim`` float32 values for ``text`` (never the zero vector)."""
    words = _WORD.findall(text.lower())
    tokens = words + [f"{a} {b}" for a, b in pairwise(words)]
    vector = np.zeros(dim, dtype=np.float32)
    for token in tokens:
        index, sign = _bucket(token, dim)
        vector[index] += sign
    norm = float(np.linalg.norm(vector))
    if norm == 0.0:
        # no words at all: a fixed direction, so COSINE still accepts the vector
        vector[0] = 1.0
        return vector
    return vector / np.float32(norm)
