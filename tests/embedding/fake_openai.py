"""A small OpenAI-compatible embeddings endpoint for tests and benchmarks, run in a thread.

``POST /v1/embeddings`` with ``{"model": m, "input": [texts]}`` answers
``{"data": [{"index": i, "embedding": [...]}]}``: a deterministic unit vector per text made
from its words (each word adds a fixed pseudo-random vector), so texts sharing words are
near each other and the same text always gets the same vector. The test steers it:
``fail_next`` (answers that many requests with ``fail_status`` first), ``delay_s``,
``wrong_dim``, ``api_key`` (when set, other keys get HTTP 401). ``requests`` records
every request's (texts, headers).
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np


@functools.lru_cache(maxsize=65536)
def word_vector(word: str, dim: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(dim).astype(np.float32)


def text_vector(text: str, dim: int) -> np.ndarray:
    words = [w.strip(".,;:!?\"'()").lower() for w in text.split()] or [""]
    vector = np.sum([word_vector(w, dim) for w in words], axis=0)
    return vector / (np.linalg.norm(vector) or 1.0)


class FakeEmbeddings:
    def __init__(self, dim: int = 16) -> None:
        self.dim = dim
        self.api_key: str | None = None
        self.fail_next = 0
        self.fail_status = 503
        self.delay_s = 0.0
        self.wrong_dim = False
        self.requests: list[tuple[list[str], dict[str, str]]] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                fake.handle(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def texts_seen(self) -> int:
        return sum(len(texts) for texts, _ in self.requests)

    def _answer(self, handler: BaseHTTPRequestHandler, status: int, body: Any) -> None:
        payload = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length", "0"))
        body = json.loads(handler.rfile.read(length) or b"{}")
        texts = body.get("input", [])
        if isinstance(texts, str):
            texts = [texts]
        headers = {k.lower(): v for k, v in handler.headers.items()}
        with self.lock:
            self.requests.append((list(texts), headers))
            failing = self.fail_next > 0
            if failing:
                self.fail_next -= 1
        if self.delay_s:
            time.sleep(self.delay_s)
        if handler.path.rstrip("/") != "/v1/embeddings":
            self._answer(handler, 404, {"error": {"message": f"no route {handler.path}"}})
            return
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            self._answer(handler, 401, {"error": {"message": "Incorrect API key provided"}})
            return
        if failing:
            self._answer(handler, self.fail_status, {"error": {"message": "model overloaded"}})
            return
        dim = self.dim + 1 if self.wrong_dim else self.dim
        data = [{"object": "embedding", "index": i, "embedding": text_vector(t, dim).tolist()}
                for i, t in enumerate(texts)]
        data.reverse()  # the client must put them back in index order
        self._answer(handler, 200, {"object": "list", "data": data, "model": body.get("model")})
