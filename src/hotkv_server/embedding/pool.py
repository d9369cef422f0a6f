"""The embedding worker pool: embedders run here, never on the event loop.

``submit(embedder, texts)`` queues one request and returns a ``concurrent.futures``
Future of its ``len(texts) x dim`` vectors. Per embedder, at most ``threads`` drainers (daemon
threads, started when work arrives, ending when the queue is empty) run
at a time; each takes the queued requests in order until ``embedder.batch_size`` texts
are gathered and makes one ``embed`` call of them all, so requests that arrive while the
workers are busy are embedded together (a bulk store by text costs one model call per
batch, one HTTP request per batch). An exception fails every request of that batch with
an :class:`EmbeddingError` naming the embedder and the cause. A request cancelled before
its batch starts (its deadline passed, the server is shutting down) is skipped.

numpy and onnxruntime release the GIL for their work, tokenizers for batch encoding, and
an HTTP call waits on a socket, so the event loop keeps serving other clients.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from hotkv_server.embedding.base import Embedder, EmbeddingError, as_vectors

log = logging.getLogger("hotkv")

DEFAULT_THREADS = 2

Request = tuple[list[str], "concurrent.futures.Future[np.ndarray]"]


@dataclass
class EmbedderCounters:
    """Per embedder, for INFO amem (``embed_<name>_*``)."""

    texts: int = 0
    batches: int = 0
    errors: int = 0
    busy_us: int = 0


@dataclass
class _Queue:
    embedder: Embedder
    items: deque[Request] = field(default_factory=deque)
    drainers: int = 0


class EmbeddingPool:
    def __init__(self, threads: int = DEFAULT_THREADS) -> None:
        self.threads = threads
        self._lock = threading.Lock()
        self._queues: dict[str, _Queue] = {}
        self.counters: dict[str, EmbedderCounters] = {}
        self.closed = False

    def submit(self, embedder: Embedder, texts: list[str]) -> concurrent.futures.Future[np.ndarray]:
        future: concurrent.futures.Future[np.ndarray] = concurrent.futures.Future()
        if self.closed:
            future.set_exception(EmbeddingError(embedder.name, "the server is shutting down"))
            return future
        start = False
        with self._lock:
            queue = self._queues.get(embedder.name)
            if queue is None or queue.embedder is not embedder:
                queue = self._queues[embedder.name] = _Queue(embedder)
            queue.items.append((texts, future))
            if queue.drainers < self.threads:
                queue.drainers += 1
                start = True
        if start:
            # a daemon thread, not a ThreadPoolExecutor's: the interpreter joins those at
            # exit, and a shutdown must not wait for an HTTP call that is retrying
            threading.Thread(target=self._drain, args=(queue,), daemon=True,
                             name=f"hotkv-embed-{embedder.name}").start()
        return future

    def queued(self) -> int:
        with self._lock:
            return sum(len(q.items) for q in self._queues.values())

    def _take(self, queue: _Queue) -> list[Request]:
        """The next batch (the lock held): whole requests up to batch_size texts."""
        batch: list[Request] = []
        count = 0
        limit = max(1, queue.embedder.batch_size)
        while queue.items and (not batch or count + len(queue.items[0][0]) <= limit):
            texts, future = queue.items.popleft()
            if not future.set_running_or_notify_cancel():
                continue  # cancelled while queued
            batch.append((texts, future))
            count += len(texts)
        return batch

    def _drain(self, queue: _Queue) -> None:
        embedder = queue.embedder
        counters = self.counters.setdefault(embedder.name, EmbedderCounters())
        while True:
            with self._lock:
                batch = self._take(queue)
                if not batch:
                    queue.drainers -= 1
                    return
            texts = [text for request_texts, _ in batch for text in request_texts]
            started = _now_us()
            try:
                embedder.load()
                vectors = as_vectors(embedder.embed(texts), len(texts), embedder.dim)
            except Exception as exc:
                counters.errors += 1
                cause = str(exc) or type(exc).__name__
                log.warning("embedder %s failed on %d texts: %s", embedder.name, len(texts), cause)
                error = EmbeddingError(embedder.name, cause)
                for _, future in batch:
                    future.set_exception(error)
                continue
            finally:
                counters.busy_us += _now_us() - started
            counters.texts += len(texts)
            counters.batches += 1
            offset = 0
            for request_texts, future in batch:
                future.set_result(vectors[offset : offset + len(request_texts)])
                offset += len(request_texts)

    def close(self) -> None:
        """No new requests; queued ones fail, running batches finish on their own (an HTTP
        call is not waited for: shutdown must not hang on a slow endpoint)."""
        self.closed = True
        with self._lock:
            pending = [item for queue in self._queues.values() for item in queue.items]
            for queue in self._queues.values():
                queue.items.clear()
        for _, future in pending:
            future.cancel()


def _now_us() -> int:
    import time

    return time.monotonic_ns() // 1000
