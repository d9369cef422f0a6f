"""EMBED.DEDUP.* through hotkv-client 1.0.0's own embed_dedup_* methods (the official
package, installed by the test extra), against a real server."""

from __future__ import annotations

import hotkv
import numpy as np
import pytest

from helpers import HotkvProcess


@pytest.mark.parametrize("resp3", [False, True], ids=["resp2", "resp3"])
def test_embed_dedup_methods_of_the_official_client(server: HotkvProcess, resp3: bool) -> None:
    client = hotkv.from_url(f"hotkv://127.0.0.1:{server.port}", resp3=resp3)
    client.execute_command("FLUSHALL")
    emb = np.linspace(0, 1, 16, dtype="<f4").tobytes()
    assert client.embed_dedup_put("docs", "sha-1", "text-embedding-3-small", emb) is True
    assert client.embed_dedup_put("docs", "sha-1", "text-embedding-3-small", emb) is False
    assert client.embed_dedup_get("docs", "sha-1") == emb
    assert client.embed_dedup_get("docs", "sha-2") is None
    stats = client.embed_dedup_stats("docs")
    assert (stats["hits"], stats["misses"], stats["entries"]) == (1, 1, 1)
    assert client.embed_dedup_list() == [b"docs"]
    assert client.embed_dedup_release("docs", "sha-1") is True
    assert client.embed_dedup_get("docs", "sha-1") == emb  # one reference left
    assert client.embed_dedup_release("docs", "sha-1") is True
    assert client.embed_dedup_get("docs", "sha-1") is None  # freed at zero
    assert client.embed_dedup_release("docs", "sha-1") is False
    assert client.embed_dedup_purge("docs") is True
    assert client.embed_dedup_drop("docs") is True
    assert client.embed_dedup_drop("docs") is False
    assert client.embed_dedup_list() == []
