"""The ``openai`` embedder: any OpenAI-compatible ``POST {base}/embeddings`` endpoint.

What users with a hosted model or a local inference server (vLLM, llama.cpp's server,
Ollama, text-embeddings-inference ...) use. One request carries up to ``batch_size``
texts (``{"model": m, "input": [...]}``, plus ``"dimensions": d`` when
``embed-openai-send-dimensions`` is yes); the answer's ``data[i].embedding`` are put back
in ``index`` order and must have exactly ``dim`` values.

The API key comes from the file ``embed-openai-api-key-file`` when set (read at each
request, so a rotated key is picked up), else from the environment variable named by
``embed-openai-api-key-env``; without either no ``Authorization`` header is sent. The key
never appears in a log line, INFO or an error reply.

Each attempt has ``timeout_s``; a connection error, a timeout, HTTP 408, 429 or 5xx is
retried up to ``retries`` times after ``backoff_s * 2**attempt`` (at most 30 s, a
``Retry-After`` of at most that honoured); any other HTTP error fails at once. The error
names the endpoint's answer (status and the start of its message) but not the key.
This runs on an embedding worker thread (blocking I/O is its job there), never the loop.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

import numpy as np

from hotkv_server.embedding.base import Embedder, as_vectors

_RETRIED_STATUS = frozenset({408, 429, 500, 502, 503, 504})
MAX_BACKOFF_S = 30.0


@dataclass
class HttpSettings:
    url: str
    model: str
    dim: int
    api_key_env: str = "OPENAI_API_KEY"
    api_key_file: str = ""
    batch_size: int = 64
    timeout_s: float = 30.0
    retries: int = 3
    backoff_s: float = 0.5
    send_dimensions: bool = False


class HttpError(Exception):
    """One failed attempt; ``retry`` says whether another may succeed."""

    def __init__(self, message: str, retry: bool, wait_s: float | None = None) -> None:
        super().__init__(message)
        self.retry = retry
        self.wait_s = wait_s


class OpenAIEmbedder(Embedder):
    name = "openai"

    def __init__(self, settings: HttpSettings) -> None:
        self.settings = settings
        self.batch_size = settings.batch_size
        #: requests sent (attempts, retries included) and retries, for INFO
        self.requests = 0
        self.retried = 0

    @property
    def dim(self) -> int:
        return self.settings.dim

    @property
    def model(self) -> str:
        return f"openai/{self.settings.model}/{self.settings.dim}"

    def describe(self) -> dict[str, str | int]:
        return {"model": self.model, "dim": self.dim, "url": self.settings.url}

    def api_key(self) -> str:
        settings = self.settings
        if settings.api_key_file:
            try:
                with open(settings.api_key_file, encoding="utf-8") as fh:
                    return fh.read().strip()
            except OSError as exc:
                raise RuntimeError(
                    f"cannot read the API key file {settings.api_key_file}: {exc.strerror}"
                ) from None
        if settings.api_key_env:
            return os.environ.get(settings.api_key_env, "")
        return ""

    def embed(self, texts: list[str]) -> np.ndarray:
        settings = self.settings
        out: list[np.ndarray] = []
        for start in range(0, len(texts), max(1, settings.batch_size)):
            out.append(self._embed_batch(texts[start : start + settings.batch_size]))
        return np.concatenate(out) if len(out) > 1 else out[0]

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        settings = self.settings
        attempt = 0
        while True:
            try:
                return self._request(texts)
            except HttpError as exc:
                if not exc.retry or attempt >= settings.retries:
                    tries = f" after {attempt + 1} attempts" if attempt else ""
                    raise RuntimeError(f"{exc}{tries}") from None
                wait = min(MAX_BACKOFF_S, settings.backoff_s * (2**attempt))
                if exc.wait_s is not None:
                    wait = min(MAX_BACKOFF_S, max(wait, exc.wait_s))
                attempt += 1
                self.retried += 1
                time.sleep(wait)

    def _request(self, texts: list[str]) -> np.ndarray:
        settings = self.settings
        body: dict[str, Any] = {"model": settings.model, "input": texts}
        if settings.send_dimensions:
            body["dimensions"] = settings.dim
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = self.api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        url = settings.url.rstrip("/") + "/embeddings"
        request = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
        self.requests += 1
        try:
            with urllib.request.urlopen(request, timeout=settings.timeout_s) as response:
                payload = response.read()
        except urllib.error.HTTPError as exc:
            detail = _error_detail(exc)
            wait = _retry_after(exc.headers.get("Retry-After") if exc.headers else None)
            raise HttpError(f"{url} answered HTTP {exc.code}{detail}",
                            exc.code in _RETRIED_STATUS, wait) from None
        except TimeoutError:
            raise HttpError(f"{url} did not answer within {settings.timeout_s:g} s", True) from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError):
                raise HttpError(
                    f"{url} did not answer within {settings.timeout_s:g} s", True) from None
            raise HttpError(f"cannot reach {url}: {reason}", True) from None
        except OSError as exc:  # a reset connection mid-answer
            raise HttpError(f"connection to {url} failed: {exc}", True) from None
        return self._vectors(payload, len(texts), url)

    def _vectors(self, payload: bytes, count: int, url: str) -> np.ndarray:
        try:
            answer = json.loads(payload)
            data = answer["data"]
            rows = sorted(data, key=lambda item: int(item.get("index", 0)))
            vectors = [row["embedding"] for row in rows]
        except (ValueError, KeyError, TypeError, AttributeError):
            raise HttpError(f"{url} answered something that is not an embeddings list", False) from None
        try:
            return as_vectors(vectors, count, self.settings.dim)
        except ValueError as exc:
            raise HttpError(f"{url} {exc}", False) from None


def _error_detail(exc: urllib.error.HTTPError) -> str:
    try:
        raw = exc.read(2048)
    except Exception:
        return ""
    text = raw.decode("utf-8", "replace")
    try:
        parsed = json.loads(text)
        error = parsed.get("error") if isinstance(parsed, dict) else None
        if isinstance(error, dict):
            text = str(error.get("message", text))
        elif isinstance(error, str):
            text = error
    except ValueError:
        pass
    text = " ".join(text.split())[:200]
    return f": {text}" if text else ""


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
