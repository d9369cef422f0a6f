"""The embedding subsystem of a running server (``core.embed``).

It builds the configured embedders from the ``embed-*`` directives (docs/embeddings.md),
owns the worker pool and the cache, follows ``CONFIG SET`` of the directives that may
change at run time, and reports ``embed_*`` fields for ``INFO amem``. The commands reach
it through :mod:`hotkv_server.commands.embed`, which turns a request into a Deferred reply.

Which embedders exist:

* ``wordllama`` when ``embed-wordllama yes`` (the default) and the package is installed;
* ``openai`` when ``embed-openai-url``, ``embed-openai-model`` and ``embed-openai-dim`` are
  all set (a URL without the other two stops the start);
* ``fastembed`` when ``embed-fastembed-path`` and ``embed-fastembed-dim`` are set.

Models load on a worker thread with the first batch, so the server starts at once and a
missing model file is an error reply naming it, not a failed start.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from hotkv_server.embedding import wordllama as wordllama_module
from hotkv_server.embedding.base import Embedder, EmbeddingError, as_vectors, to_blob
from hotkv_server.embedding.cache import EmbeddingCache
from hotkv_server.embedding.fastembed import FastEmbedEmbedder
from hotkv_server.embedding.openai import HttpSettings, OpenAIEmbedder
from hotkv_server.embedding.pool import EmbeddingPool
from hotkv_server.embedding.wordllama import WordLlamaEmbedder
from hotkv_server.engine.config import ConfigError
from hotkv_server.engine.core import Subsystem
from hotkv_server.engine.services import EmbedDone
from hotkv_server.engine.settings import Settings

log = logging.getLogger("hotkv")

#: directives of the HTTP embedder that CONFIG SET changes on the running embedder
_HTTP_LIVE: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "embed-openai-url": ("url", str),
    "embed-openai-api-key-env": ("api_key_env", str),
    "embed-openai-api-key-file": ("api_key_file", str),
    "embed-openai-batch-size": ("batch_size", int),
    "embed-openai-timeout-ms": ("timeout_s", lambda v: int(v) / 1000),
    "embed-openai-retries": ("retries", int),
    "embed-openai-backoff-ms": ("backoff_s", lambda v: int(v) / 1000),
}


def build_embedders(config: Settings) -> dict[str, Embedder]:
    """The embedders the directives describe (ConfigError for a half-set one)."""
    found: dict[str, Embedder] = {}
    if config.embed_wordllama and wordllama_module.available():
        found["wordllama"] = WordLlamaEmbedder(config.embed_wordllama_dim)
    url, model, dim = (config.embed_openai_url, config.embed_openai_model,
                       config.embed_openai_dim)
    if url or model or dim:
        if not (url and model and dim):
            raise ConfigError(
                "the openai embedder needs embed-openai-url, embed-openai-model and "
                "embed-openai-dim (all three, or none)")
        found["openai"] = OpenAIEmbedder(HttpSettings(
            url=url, model=model, dim=dim,
            api_key_env=config.embed_openai_api_key_env,
            api_key_file=config.embed_openai_api_key_file,
            batch_size=config.embed_openai_batch_size,
            timeout_s=config.embed_openai_timeout_ms / 1000,
            retries=config.embed_openai_retries,
            backoff_s=config.embed_openai_backoff_ms / 1000,
            send_dimensions=config.embed_openai_send_dimensions,
        ))
    path, fdim = config.embed_fastembed_path, config.embed_fastembed_dim
    if path or fdim:
        if not (path and fdim):
            raise ConfigError(
                "the fastembed embedder needs embed-fastembed-path and embed-fastembed-dim")
        found["fastembed"] = FastEmbedEmbedder(
            path, fdim, model_file=config.embed_fastembed_model_file,
            pooling=config.embed_fastembed_pooling)
    return found


class EmbeddingService(Subsystem):
    def __init__(self, core: Any) -> None:
        config: Settings = core.config
        self.core = core
        self.embedders = build_embedders(config)
        self.cache = EmbeddingCache(config.embed_cache_max_memory)
        self.pool = EmbeddingPool(config.embed_threads)
        self.timeout_ms: int = config.embed_timeout_ms
        #: requests that ended in an error reply (embedder failed, deadline passed)
        self.failed = 0
        self.timeouts = 0
        #: (model, text) -> the future of a text embedded ahead (prefetch), until it lands
        self.inflight: dict[tuple[str, bytes], concurrent.futures.Future[np.ndarray]] = {}
        self.ahead = 0

    def get(self, name: str) -> Embedder | None:
        return self.embedders.get(name)

    @staticmethod
    def on_loop(loop: asyncio.AbstractEventLoop,
                callback: Callable[[concurrent.futures.Future[np.ndarray]], None],
                ) -> Callable[[concurrent.futures.Future[np.ndarray]], None]:
        """A future's done callback that runs ``callback`` on the event loop's thread."""
        def done_elsewhere(done: concurrent.futures.Future[np.ndarray]) -> None:
            try:
                loop.call_soon_threadsafe(callback, done)
            except RuntimeError:  # the loop is closed: the server is shutting down
                pass
        return done_elsewhere

    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The running event loop, or None when embedding must run in place (a Core driven
        in process, or the pool shut down)."""
        if self.pool.closed:
            return None
        try:
            return asyncio.get_running_loop()
        except RuntimeError:
            return None

    # --- the protocol commands use (engine.services.EmbeddingService) -----------------
    def names(self) -> str:
        return ", ".join(sorted(self.embedders)) or "none"

    def dimension(self, name: str) -> int | None:
        embedder = self.embedders.get(name)
        return None if embedder is None else embedder.dim

    def lookup(self, name: str, texts: list[bytes]) -> list[bytes | None]:
        model = self.embedders[name].model
        inflight = self.inflight
        # a text embedded ahead and still on its way is waited for, not looked up (its
        # miss was counted when it was sent)
        return [None if (model, text) in inflight else self.cache.get(model, text)
                for text in texts]

    def running(self) -> bool:
        return self.loop() is not None

    def embed_now(self, name: str, texts: list[bytes]) -> dict[bytes, bytes]:
        embedder = self.embedders[name]
        try:
            computed = as_vectors(embedder.embed([t.decode("utf-8", "replace") for t in texts]),
                                  len(texts), embedder.dim)
        except Exception as exc:
            raise ValueError(str(EmbeddingError(name, str(exc) or type(exc).__name__))) from None
        made = {text: to_blob(row) for text, row in zip(texts, computed, strict=True)}
        for text, blob in made.items():
            self.cache.put(embedder.model, text, blob)
        return made

    def embed(self, name: str, texts: list[bytes], done: EmbedDone) -> None:
        loop = self.loop()
        assert loop is not None, "embed() needs a running loop (see running())"
        embedder = self.embedders[name]
        model = embedder.model
        inflight = self.inflight
        # the futures to wait for: one per text embedded ahead, one for all the others
        waits: list[tuple[list[bytes], concurrent.futures.Future[np.ndarray]]] = [
            ([text], inflight[(model, text)]) for text in texts if (model, text) in inflight]
        new = [text for text in texts if (model, text) not in inflight]
        if new:
            waits.append((new, self.pool.submit(
                embedder, [text.decode("utf-8", "replace") for text in new])))
        fresh: dict[bytes, bytes] = {}
        state = {"left": len(waits), "over": False}
        timeout_ms = self.timeout_ms

        def fail(message: str) -> None:
            state["over"] = True
            timer.cancel()
            self.failed += 1
            done(None, message)

        def expire() -> None:
            if state["over"]:
                return
            if new:
                waits[-1][1].cancel()
            self.timeouts += 1
            fail(str(EmbeddingError(name, f"no vectors within {timeout_ms} ms (embed-timeout-ms)")))

        timer = loop.call_later(timeout_ms / 1000, expire)

        def landed(batch: list[bytes], future: concurrent.futures.Future[np.ndarray]) -> None:
            if state["over"]:
                return
            if future.cancelled():
                fail(str(EmbeddingError(name, "the server is shutting down")))
                return
            error = future.exception()
            if error is not None:
                fail(str(error) if isinstance(error, EmbeddingError) else str(
                    EmbeddingError(name, str(error) or type(error).__name__)))
                return
            for text, row in zip(batch, future.result(), strict=True):
                blob = to_blob(row)
                fresh[text] = blob
                if batch is new:
                    self.cache.put(model, text, blob)
            state["left"] -= 1
            if not state["left"]:
                state["over"] = True
                timer.cancel()
                done(fresh, None)

        for batch, future in waits:
            future.add_done_callback(self.on_loop(loop, functools.partial(landed, batch)))

    def prefetch(self, name: str, text: bytes) -> None:
        """Embed ``text`` ahead of the command that will need it (loop thread only); its
        vector lands in the cache. Counted as the cache miss it is."""
        embedder = self.embedders.get(name)
        loop = self.loop()
        if embedder is None or loop is None:
            return
        key = (embedder.model, text)
        if key in self.inflight or self.cache.peek(*key):
            return
        self.cache.misses += 1
        self.ahead += 1
        future = self.pool.submit(embedder, [text.decode("utf-8", "replace")])
        self.inflight[key] = future

        def arrived(done: concurrent.futures.Future[np.ndarray]) -> None:
            self.inflight.pop(key, None)
            if not done.cancelled() and done.exception() is None:
                self.cache.put(key[0], key[1], to_blob(done.result()[0]), ahead=True)

        future.add_done_callback(self.on_loop(loop, arrived))

    def config_changed(self, name: str, value: Any) -> None:
        if name == "embed-cache-max-memory":
            self.cache.resize(int(value))
        elif name == "embed-timeout-ms":
            self.timeout_ms = int(value)
        elif name in _HTTP_LIVE:
            embedder = self.embedders.get("openai")
            if isinstance(embedder, OpenAIEmbedder):
                attr, convert = _HTTP_LIVE[name]
                setattr(embedder.settings, attr, convert(value))
                embedder.batch_size = embedder.settings.batch_size

    def info(self) -> list[tuple[str, Any]]:
        fields: list[tuple[str, Any]] = [("embed_embedders", self.names())]
        fields.extend(self.cache.info())
        fields.append(("embed_queued", self.pool.queued()))
        fields.append(("embed_ahead", self.ahead))
        fields.append(("embed_failed_requests", self.failed))
        fields.append(("embed_timeouts", self.timeouts))
        for name in sorted(self.embedders):
            embedder = self.embedders[name]
            counters = self.pool.counters.get(name)
            fields.append((f"embed_{name}_dim", embedder.dim))
            fields.append((f"embed_{name}_model", embedder.model))
            fields.append((f"embed_{name}_texts", counters.texts if counters else 0))
            fields.append((f"embed_{name}_batches", counters.batches if counters else 0))
            fields.append((f"embed_{name}_errors", counters.errors if counters else 0))
            fields.append((f"embed_{name}_busy_us", counters.busy_us if counters else 0))
        return fields

    def close(self, save: bool | None = None) -> None:
        self.pool.close()
