"""Embeddings inside the server: store text and recall by meaning with no model service.

One module per embedder (``wordllama``, ``openai`` for any OpenAI-compatible HTTP
endpoint, ``fastembed`` for ONNX models on disk), the worker ``pool`` they run in, the
``cache`` of computed vectors and the ``service`` that ties them to a running server.
This is a server subsystem: the stores never embed (an effect carries the vector the
primary computed, so AOF replay and replicas need no embedder), and the commands reach
it only through :mod:`hotkv_server.commands.embed`. docs/embeddings.md is the manual.
"""

from __future__ import annotations

from typing import Any

from hotkv_server.embedding.service import EmbeddingService


def attach(server: Any) -> EmbeddingService:
    """Server subsystem hook (``Server._open_subsystems``); a half-configured embedder
    stops the start with one line naming the directives it lacks."""
    from hotkv_server.engine.config import ConfigError
    from hotkv_server.engine.errors import StartupError

    try:
        service = EmbeddingService(server.core)
    except ConfigError as exc:
        raise StartupError(f"*** FATAL CONFIG ERROR *** {exc}") from None
    server.core.embed = service
    return service
