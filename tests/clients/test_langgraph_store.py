"""The HotKV product's LangGraph long-term store (``langgraph-checkpoint-hotkv`` 1.0.0's
``HotKVStore`` and ``AsyncHotKVStore``) against a real hotkv-server: items in hashes and
sets, atomic steps in MULTI and EVAL, and its vector index on ``VSIM.*`` (the store creates
``VSIM.CREATEINDEX ... METRIC cosine`` per namespace, ``VSIM.SET``/``VSIM.DEL`` per indexed
text, ``VSIM.SEARCH`` for a query, and ``VSIM.DROPINDEX`` from Lua when a namespace empties).

The embedding is a small deterministic bag of words (each word hashed to a few of 64
dimensions), so texts sharing words are near and the expected order is known.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import time
from collections.abc import Iterator

import hotkv
import hotkv.asyncio
import pytest
import redis
from langgraph.store.hotkv import AsyncHotKVStore, HotKVStore

from helpers import HotkvProcess

DIMS = 64
_prefixes = itertools.count()


def embed(texts: list[str]) -> list[list[float]]:
    out = []
    for text in texts:
        vec = [0.0] * DIMS
        for word in text.lower().replace(",", " ").split():
            digest = hashlib.sha256(word.encode()).digest()
            for i in range(3):
                vec[digest[i] % DIMS] += 1.0 if digest[3 + i] % 2 else -1.0
        if not any(vec):
            vec[0] = 1.0
        out.append(vec)
    return out


@pytest.fixture(scope="module")
def server() -> Iterator[HotkvProcess]:
    proc = HotkvProcess().start()
    yield proc
    proc.stop()


@pytest.fixture
def client(server: HotkvProcess) -> Iterator[hotkv.HotKV]:
    c = hotkv.from_url(f"hotkv://127.0.0.1:{server.port}")
    yield c
    c.close()


def make_store(client: hotkv.HotKV, **options: object) -> HotKVStore:
    return HotKVStore(client, prefix=f"lgs{next(_prefixes)}", **options)  # type: ignore[arg-type]


def test_put_get_search_with_filters_and_delete(client: hotkv.HotKV) -> None:
    store = make_store(client)
    store.put(("users", "ada"), "prefs", {"theme": "dark", "size": 12})
    store.put(("users", "ada"), "lang", {"theme": "light", "size": 9})
    store.put(("users", "bob"), "prefs", {"theme": "dark", "size": 14})
    item = store.get(("users", "ada"), "prefs")
    assert item is not None and item.value == {"theme": "dark", "size": 12}
    assert item.namespace == ("users", "ada")
    dark = store.search(("users",), filter={"theme": "dark"})
    assert sorted((i.namespace[1], i.key) for i in dark) == [("ada", "prefs"), ("bob", "prefs")]
    big = store.search(("users",), filter={"size": {"$gt": 10}})
    assert {i.value["size"] for i in big} == {12, 14}
    store.delete(("users", "ada"), "prefs")
    assert store.get(("users", "ada"), "prefs") is None
    assert [i.key for i in store.search(("users", "ada"))] == ["lang"]


def test_list_namespaces(client: hotkv.HotKV) -> None:
    store = make_store(client)
    for ns in [("a", "x"), ("a", "y", "z"), ("b", "x")]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces() == [("a", "x"), ("a", "y", "z"), ("b", "x")]
    assert store.list_namespaces(prefix=("a",)) == [("a", "x"), ("a", "y", "z")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("b",)]
    store.delete(("b", "x"), "k")
    assert store.list_namespaces() == [("a", "x"), ("a", "y", "z")]


def test_ttl_and_refresh_on_read(client: hotkv.HotKV, server: HotkvProcess) -> None:
    store = make_store(client, ttl={"default_ttl": 0.05, "refresh_on_read": True})  # 3 s
    store.put(("t",), "k", {"v": 1})
    raw = redis.Redis(port=server.port)
    key = next(iter(raw.keys(f"{store._core.p}:it:*")))
    assert 0 < raw.ttl(key) <= 3
    time.sleep(1.6)
    assert store.get(("t",), "k") is not None  # a read puts the deadline back at 3 s
    assert raw.ttl(key) == 3
    time.sleep(3.3)
    assert store.get(("t",), "k") is None


def test_search_by_meaning_uses_the_vsim_index(client: hotkv.HotKV, server: HotkvProcess) -> None:
    store = make_store(client, index={"dims": DIMS, "embed": embed, "fields": ["text"]})
    docs = {
        "m1": "the user prefers dark mode in every editor",
        "m2": "the user drinks green tea every morning",
        "m3": "lunch is usually a salad with tuna",
        "m4": "dark chocolate is a favourite snack",
    }
    for key, text in docs.items():
        store.put(("mem", "ada"), key, {"text": text, "kind": "pref" if key < "m3" else "food"})
    raw = redis.Redis(port=server.port)
    index = f"{store._core.p}:vi:mem\x1eada"
    assert raw.execute_command("VSIM.INFO", index)[:2] == [b"name", index.encode()]
    assert raw.type(index) == b"vectorset" and raw.execute_command("VCARD", index) == 4
    hits = store.search(("mem",), query="dark mode editor", limit=2)
    assert [h.key for h in hits] == ["m1", "m4"]
    assert hits[0].score is not None and hits[0].score > hits[1].score  # type: ignore[operator]
    filtered = store.search(("mem",), query="dark", filter={"kind": "food"}, limit=3)
    assert next(h.key for h in filtered) == "m4"
    assert {h.value["kind"] for h in filtered} == {"food"}
    # a new version of an item replaces its vector; deleting the last item drops the index
    store.put(("mem", "ada"), "m4", {"text": "green tea with honey", "kind": "food"})
    assert next(h.key for h in store.search(("mem",), query="green tea", limit=2)) in ("m2", "m4")
    assert "m4" not in [h.key for h in store.search(("mem",), query="dark chocolate snack",
                                                      limit=1)]
    for key in docs:
        store.delete(("mem", "ada"), key)
    assert raw.exists(index) == 0
    assert index.encode() not in raw.execute_command("VSIM.INFO")


def test_async_store(server: HotkvProcess) -> None:
    async def main() -> None:
        client = hotkv.asyncio.from_url(f"hotkv://127.0.0.1:{server.port}")
        store = AsyncHotKVStore(client, prefix=f"lgs{next(_prefixes)}",
                                index={"dims": DIMS, "embed": embed, "fields": ["text"]})
        await store.aput(("n",), "a", {"text": "red apples and pears"})
        await store.aput(("n",), "b", {"text": "blue sky over the sea"})
        hits = await store.asearch(("n",), query="apples", limit=1)
        assert [h.key for h in hits] == ["a"]
        assert (await store.aget(("n",), "b")).value == {"text": "blue sky over the sea"}  # type: ignore[union-attr]
        assert await store.alist_namespaces() == [("n",)]
        await client.aclose() if hasattr(client, "aclose") else await client.close()

    asyncio.run(main())
