"""SORT in cluster mode: a BY or GET pattern whose keys may lie in another slot than the
sorted key is refused (Redis 7.4's rule), one pinned to the key's slot by a hash tag works;
the sorted key and STORE's destination are routed like any two keys (CROSSSLOT)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from cluster.test_cluster import err
from helpers import HotkvProcess

BY_DENIED = ("ERR BY option of SORT denied in Cluster mode when keys formed by the pattern "
             "may be in different slots.")
GET_DENIED = ("ERR GET option of SORT denied in Cluster mode when keys formed by the pattern "
              "may be in different slots.")


@pytest.fixture(scope="module")
def lone() -> Iterator[HotkvProcess]:
    """One cluster node serving every slot."""
    node = HotkvProcess("--cluster-enabled", "yes").start()
    try:
        node.client(protocol=2).execute_command("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
        yield node
    finally:
        node.cleanup()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def c(request: pytest.FixtureRequest, lone: HotkvProcess) -> redis.Redis:
    client = lone.client(protocol=request.param)
    client.execute_command("FLUSHALL")
    client.rpush("{u}:items", "a", "b", "c")
    client.mset({"{u}:w_a": "3", "{u}:w_b": "1", "{u}:w_c": "2"})
    client.hset("{u}:o_a", "name", "Alice")
    return client


def test_patterns_pinned_to_the_sorted_keys_slot_work(c: redis.Redis) -> None:
    assert c.execute_command("SORT", "{u}:items", "BY", "{u}:w_*") == [b"b", b"c", b"a"]
    assert c.execute_command("SORT", "{u}:items", "BY", "{u}:w_*", "GET", "#",
                             "GET", "{u}:o_*->name", "LIMIT", "2", "1") == [b"a", b"Alice"]
    # the tag decides before the '*' is reached, wherever it stands
    assert c.execute_command("SORT_RO", "{u}:items", "BY", "w_{u}_*") == [b"a", b"b", b"c"]
    # no '*': nothing else is read, so any BY constant is fine
    assert c.execute_command("SORT", "{u}:items", "BY", "nosort", "DESC") == [b"c", b"b", b"a"]
    assert c.execute_command("SORT", "{u}:items", "ALPHA", "GET", "#") == [b"a", b"b", b"c"]


@pytest.mark.parametrize("pattern", ["w_*", "w_*{u}", "{}{u}w_*", "{u*}w_", "w_\\{u}*", "{v}:w_*"])
def test_patterns_that_may_reach_other_slots_are_refused(lone: HotkvProcess, c: redis.Redis,
                                                         pattern: str) -> None:
    assert err(lone, "SORT", "{u}:items", "BY", pattern) == BY_DENIED
    assert err(lone, "SORT_RO", "{u}:items", "GET", "#", "GET", pattern) == GET_DENIED
    assert c.ping()  # refused with one error line, the connection stays


def test_the_first_refused_option_answers(lone: HotkvProcess, c: redis.Redis) -> None:
    assert err(lone, "SORT", "{u}:items", "GET", "w_*", "BY", "x_*") == GET_DENIED
    assert err(lone, "SORT", "{u}:items", "FOO", "BY", "x_*") == "ERR syntax error"


def test_store_destination_is_routed_with_the_sorted_key(lone: HotkvProcess, c: redis.Redis) -> None:
    assert c.execute_command("SORT", "{u}:items", "ALPHA", "STORE", "{u}:out") == 3
    assert c.lrange("{u}:out", 0, -1) == [b"a", b"b", b"c"]
    assert err(lone, "SORT", "{u}:items", "ALPHA", "STORE", "{v}:out").startswith("CROSSSLOT")
    assert c.execute_command("CLUSTER", "KEYSLOT", "{u}:out") == c.execute_command(
        "CLUSTER", "KEYSLOT", "{u}:items")
