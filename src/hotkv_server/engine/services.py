"""Protocols of the subsystems whose classes live where the engine and the commands may
not import (the embedders, the maxmemory guard, the search threads, the script engine).

Each types a field of Core (``core.embed``, ``core.memory``, ``core.search``,
``core.scripts``), set by its subsystem when the app attaches it, so ``commands`` never
imports a subsystem package (the import graph runs server -> engine <- commands,
persistence, replication ...). A protocol that names a Context or Core
(``PersistenceService``, ``ReplicationService``, ``ClusterService``) is declared beside
them in ``engine/core.py``, which imports this module: this one imports no other module of
the engine.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["EmbedDone", "EmbeddingService", "MemoryLimit", "ScriptService", "SearchThreads"]


class MemoryLimit(Protocol):
    """``hotkv_server.server.memory.MemoryGuard`` as the dispatch point asks it before a
    denyoom command while maxmemory is set (``core.memory``)."""

    def enforce(self) -> bool:
        """Evict while over maxmemory; True when still over with nothing left to evict."""


class SearchThreads(Protocol):
    """``hotkv_server.commands.sem_service.SemanticService`` as commands/vector_threads.py
    hands it a vector search (``core.search``)."""

    #: shut down: every search runs in place
    closed: bool

    def submit(self, search: Callable[[], None]) -> concurrent.futures.Future[None] | None:
        """Run ``search`` on a search thread; None when closed (search in place then)."""


class ScriptService(Protocol):
    """``hotkv_server.scripting.engine.ScriptEngine`` as SCRIPT KILL asks it (``core.scripts``,
    made by the first script; ``scripting.engine.engine_of`` returns the class itself)."""

    def kill(self) -> str | None:
        """None when the running script will stop, else the error reply's text."""


#: ``done(vectors, None)`` with an FP32 blob per text, or ``done(None, error reply text)``
EmbedDone = Callable[[dict[bytes, bytes] | None, str | None], None]


class EmbeddingService(Protocol):
    """``hotkv_server.embedding.service.EmbeddingService`` as AMEM.SEM.* use it
    (``core.embed``; commands/embed.py turns it into deferred replies) and INFO amem."""

    def dimension(self, name: str) -> int | None:
        """The vector length of the configured embedder ``name``; None if there is none."""

    def names(self) -> str:
        """The configured embedders, for error messages ("wordllama, openai" or "none")."""

    def lookup(self, name: str, texts: list[bytes]) -> list[bytes | None]:
        """The cached vector of each text (a hit or a miss counted); None for one not
        cached or on its way (embedded ahead)."""

    def running(self) -> bool:
        """Whether :meth:`embed` can work off the loop (a running loop, an open pool)."""

    def embed(self, name: str, texts: list[bytes], done: EmbedDone) -> None:
        """Embed ``texts`` on the worker pool (waiting for the ones on their way); ``done``
        runs once on the loop thread, with the vectors or the error (the deadline
        ``embed-timeout-ms`` included)."""

    def embed_now(self, name: str, texts: list[bytes]) -> dict[bytes, bytes]:
        """Embed in place (no running loop); ValueError with the error reply text."""

    def info(self) -> list[tuple[str, Any]]:
        """INFO amem's embedding fields."""

    def prefetch(self, name: str, text: bytes) -> None:
        """Start embedding ``text`` for a command that will need it; its vector lands in
        the cache."""
