"""The HotKV product's VSIM.* index through the official client (``hotkv-client`` 1.0.0's
``vsim_*`` methods) and redis-py in RESP2 and RESP3, against a real hotkv-server: the wire
contract the client's reply callbacks parse, tags and FILTER, errors, the snapshots, and
what a tenant restricted by ACL key patterns sees of other tenants' indexes and snapshots."""

from __future__ import annotations

from collections.abc import Iterator

import hotkv
import numpy as np
import pytest
import redis

from helpers import HotkvProcess


@pytest.fixture
def client(server: HotkvProcess) -> Iterator[hotkv.HotKV]:
    c = hotkv.from_url(f"hotkv://127.0.0.1:{server.port}")
    c.flushall()
    yield c
    c.close()


def test_the_official_client(client: hotkv.HotKV) -> None:
    assert client.vsim_createindex("docs", 4, metric="cosine", m=8, ef_search=50) is True
    with pytest.raises(Exception, match="already exists"):
        client.vsim_createindex("docs", 4)
    assert client.vsim_set("docs", "a", [1.0, 0.0, 0.0, 0.0]) is True
    assert client.vsim_set("docs", "a", [1.0, 0.1, 0.0, 0.0]) is False  # replaced
    client.vsim_set("docs", "b", [0.0, 1.0, 0.0, 0.0])
    client.vsim_set("docs", "c", [0.7, 0.7, 0.0, 0.0])
    assert client.vsim_get("docs", "b") == pytest.approx([0.0, 1.0, 0.0, 0.0], abs=1e-6)
    assert client.vsim_get("docs", "zz") is None
    hits = client.vsim_search("docs", 2, [1.0, 0.0, 0.0, 0.0])
    assert [k for k, _ in hits] == [b"a", b"c"]
    assert hits[0][1] == pytest.approx(1 - 1 / np.sqrt(1.01), abs=1e-5)  # cosine distance
    assert client.vsim_search("docs", 2, [1.0, 0.0, 0.0, 0.0], ef=200)[0][0] == b"a"
    info = client.vsim_info("docs")
    assert (info["name"], info["dims"], info["metric"], info["size"], info["m"]) == \
        ("docs", 4, "cosine", 3, 8)
    assert client.vsim_info() == [b"docs"]
    assert client.vsim_del("docs", "a") is True and client.vsim_del("docs", "a") is False
    assert client.vsim_dropindex("docs") is True
    with pytest.raises(Exception, match="no such index"):
        client.vsim_search("docs", 2, [1.0, 0.0, 0.0, 0.0])
    assert client.vsim_save("snap", b"\x00\x01blob") == 6
    assert client.vsim_load("snap") == b"\x00\x01blob" and client.vsim_list() == [b"snap"]
    assert client.vsim_drop("snap") is True and client.vsim_load("snap") is None


def test_tags_filter_and_metrics(r: redis.Redis) -> None:
    x = r.execute_command
    x("VSIM.CREATEINDEX", "t", 2, "METRIC", "l2")
    x("VSIM.SET", "t", "p", 0, 0, "TAGS", "red", "big")
    x("VSIM.SET", "t", "q", 3, 4, "TAGS", "red")
    x("VSIM.SET", "t", "s", 1, 0)
    reply = x("VSIM.SEARCH", "t", 3, 0, 0)
    assert reply[::2] == [b"p", b"s", b"q"]
    assert [float(d) for d in reply[1::2]] == pytest.approx([0.0, 1.0, 5.0])  # euclidean
    assert x("VSIM.SEARCH", "t", 3, 0, 0, "FILTER", "red")[::2] == [b"p", b"q"]
    assert x("VSIM.SEARCH", "t", 3, 0, 0, "FILTER", "red", "big", "EF", 10)[::2] == [b"p"]
    assert x("VGETATTR", "t", "q") == b'{"tags": ["red"]}'
    assert x("VSIM.GET", "t", "q") == ([b"3", b"4"] if r.get_connection_kwargs().get(
        "protocol") in (None, 2) else [3.0, 4.0])
    assert r.type("t") == b"vectorset" and x("VCARD", "t") == 3
    for args, text in [
        (("VSIM.SET", "t", "z", 1), "vector must have 2 float components"),
        (("VSIM.SET", "t", "z", 1, 2, "COLOR", "x"), "syntax error"),
        (("VSIM.SEARCH", "t", 0, 1, 2), "k must be an integer"),
        (("VSIM.SEARCH", "nope", 1, 1, 2), "no such index"),
        (("VSIM.CREATEINDEX", "u", 2, "METRIC", "hamming"), "METRIC must be cosine, l2 or ip"),
        (("VSIM.CREATEINDEX", "u", 0), "dims must be an integer"),
        (("VSIM.DROPINDEX", "nope"), "no such index"),
    ]:
        with pytest.raises(redis.ResponseError, match=text):
            x(*args)
    assert x("VCARD", "t") == 3 and r.exists("u") == 0


def test_tenants_see_only_their_indexes_and_snapshots(server: HotkvProcess) -> None:
    admin = redis.Redis(port=server.port)
    admin.flushall()
    for name in ("a:ix", "b:ix"):
        admin.execute_command("VSIM.CREATEINDEX", name, 2)
        admin.execute_command("VSIM.SET", name, "secret", 1, 0)
    admin.execute_command("VSIM.SAVE", "a:snap", "1")
    admin.execute_command("VSIM.SAVE", "b:snap", "2")
    admin.execute_command("ACL", "SETUSER", "ta", "on", ">pw", "~a:*", "+@all")
    try:
        tenant = redis.Redis(port=server.port, username="ta", password="pw")
        assert tenant.execute_command("VSIM.INFO") == [b"a:ix"]
        assert tenant.execute_command("VSIM.LIST") == [b"a:snap"]
        for args in (("VSIM.SEARCH", "b:ix", 1, 1, 0), ("VSIM.GET", "b:ix", "secret"),
                     ("VSIM.LOAD", "b:snap"), ("VSIM", "b:ix", "ELE", "secret")):
            with pytest.raises(redis.exceptions.NoPermissionError):
                tenant.execute_command(*args)
        assert tenant.execute_command("VSIM.SEARCH", "a:ix", 1, 1, 0)[0] == b"secret"
    finally:
        admin.execute_command("ACL", "DELUSER", "ta")
