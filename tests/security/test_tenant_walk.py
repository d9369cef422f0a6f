"""A tenant learns nothing of another tenant: every command, every cursor, every error.

The server runs with the tenant users exactly as docs/security.md's template writes them
(read from the page itself). tenant-a fills every store and the string cache; then
tenant-b calls every command and subcommand of ``COMMAND LIST`` with arguments built from
``COMMAND DOCS`` (its own ids, tenant-a's ids, cursors, patterns) on a fresh connection,
in plain and inside MULTI/EXEC, and no reply and no error may hold a byte of tenant-a's
ids, values, user name or password, nor the hex spelling of its ids. Cursor walks
(AMEM.SCAN in all five stores, SCAN) must answer exactly the same whether tenant-a has
data or not: nothing in them depends on another tenant.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from helpers import ROOT, HotkvProcess

STORES = ("CONV", "SEM", "WORK", "EPIS", "SUMMARY")
#: what must never reach tenant-b: tenant-a's id prefix (its ids, values and user name all
#: hold it), its password, and the hex of its ids (the old AMEM.SCAN cursor)
SECRETS = (b"tenant-a", b"secret-a", b"tenant-a".hex().encode(), b"TENANT-A")


def template_users() -> list[list[str]]:
    """The ``user tenant-...`` lines of docs/security.md's tenant template, as words."""
    text = (ROOT / "docs" / "security.md").read_text()
    lines = re.findall(r"^user (tenant-[ab] .*)$", text, re.M)
    assert len(lines) == 2, "docs/security.md must show the template for tenant-a and tenant-b"
    return [shlex.split(line) for line in lines]


@pytest.fixture(scope="module")
def proc() -> Iterator[HotkvProcess]:
    args: list[str] = ["--requirepass", "root-pw", "--slowlog-log-slower-than", "0"]
    for words in template_users():
        args += ["--user", *words]
    server = HotkvProcess(*args).start()
    try:
        yield server
    finally:
        server.cleanup()


def login(proc: HotkvProcess, tenant: str, protocol: int = 3) -> redis.Redis:
    password = {"tenant-a": "secret-a", "tenant-b": "secret-b"}[tenant]
    return proc.client(protocol=protocol, username=tenant, password=password, socket_timeout=5)


def seed(client: redis.Redis, t: str, n: int = 12) -> None:
    for i in range(n):
        client.execute_command("AMEM.CONV.CREATE", f"{t}:s{i}")
        client.execute_command("AMEM.CONV.APPEND", f"{t}:s{i}", "user", f"words of {t}")
        client.execute_command("AMEM.WORK.SET", f"{t}:s{i}", "k", f"note of {t}")
        client.execute_command("AMEM.EPIS.LOG", f"{t}:agent{i}", "action", f"event of {t}")
        client.execute_command("AMEM.SUMMARY.SET", f"{t}:agent{i}", f"summary of {t}")
        client.execute_command("AMEM.SEM.CREATE", f"{t}:kb{i}", "2")
        client.execute_command("AMEM.SEM.STORE", f"{t}:kb{i}", "f", f"fact of {t}", "0.1", "0.2")
        client.set(f"{t}:cache:{i}", f"value of {t}")


def flat(value: Any) -> bytes:
    """Every byte of a reply (nested lists, maps, errors), joined."""
    if isinstance(value, BaseException):
        value = str(value)
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    if isinstance(value, bytes):
        return value
    if isinstance(value, dict):
        return flat(list(value.keys())) + b"\0" + flat(list(value.values()))
    if isinstance(value, (list, tuple, set)):
        return b"\0".join(flat(item) for item in value)
    return repr(value).encode()


def leaks(value: Any, sent: list[str] = []) -> list[bytes]:  # noqa: B006 (read only)
    """The secrets found in a reply, apart from what the request itself said (ECHO, an
    error quoting the argument it refuses)."""
    text = flat(value)
    for arg in sorted(sent, key=len, reverse=True):
        text = text.replace(arg.encode(), b"\0")
    return [secret for secret in SECRETS if secret in text]


# --- argument lists from COMMAND DOCS ------------------------------------------------------


def _value(arg: dict[bytes, Any], key: str) -> list[str]:
    kind = arg.get(b"type", b"string").decode()
    name = arg.get(b"name", b"").decode().lower()
    if kind == "key":
        return [key]
    if kind == "pure-token":
        return [arg[b"token"].decode()]
    if kind == "oneof":
        return _args(arg[b"arguments"][:1], key, optional=True)
    if kind == "block":
        return _args(arg[b"arguments"], key, optional=True)
    if kind == "pattern":
        return ["*"]
    if kind in ("integer", "unix-time"):
        return ["0"] if "cursor" in name else ["2"]
    if kind == "double":
        return ["0.5"]
    if "cursor" in name:
        return ["0"]
    return ["x"]


def _args(spec: list[dict[bytes, Any]], key: str, *, optional: bool) -> list[str]:
    out: list[str] = []
    for arg in spec:
        flags = arg.get(b"flags", [])
        if b"optional" in flags and not optional:
            continue
        token = arg.get(b"token")
        if token is not None and arg.get(b"type") != b"pure-token":
            out.append(token.decode())
        out += _value(arg, key)
    return out


#: argument lists tried for every command besides the ones built from its docs
GENERIC = [[], ["*"], ["0"], ["tenant-b:s0"], ["tenant-a:s0"], ["0", "COUNT", "1000"],
           ["0", "MATCH", "*", "COUNT", "1000"], ["tenant-b:s0", "*"], ["tenant-a:s0", "k"]]


def calls(docs: dict[bytes, Any]) -> Iterator[list[str]]:
    """Every (command words + arguments) list to try, for every command and subcommand."""
    for name, doc in sorted(docs.items()):
        if b"subcommands" in doc:
            yield from calls({sub: d for sub, d in doc[b"subcommands"].items()})
            continue
        words = name.decode().split("|")
        spec = doc.get(b"arguments", [])
        tried: list[list[str]] = []
        for key in ("tenant-b:s0", "tenant-b:kb0", "tenant-a:s0", "tenant-a:kb0"):
            tried.append(_args(spec, key, optional=False))
            tried.append(_args(spec, key, optional=True))
        for store in STORES:  # AMEM.SCAN's and SCAN's TYPE, and any other TYPE token
            tried.append(["0", "TYPE", store, "COUNT", "1"])
        tried += GENERIC
        seen: set[tuple[str, ...]] = set()
        for args in tried:
            if tuple(args) not in seen:
                seen.add(tuple(args))
                yield words + args


#: commands that show or touch the whole server (or end it): the template must deny them
MUST_BE_DENIED = ["MONITOR", "SYNC", "PSYNC ? -1", "SHUTDOWN NOSAVE", "DEBUG SLEEP 0", "CLIENT LIST",
                  "CLIENT KILL 127.0.0.1:1", "ACL LOG", "ACL LIST", "ACL USERS", "SLOWLOG GET",
                  "INFO", "KEYS *", "CONFIG GET *", "FLUSHALL", "FLUSHDB", "REPLICAOF NO ONE",
                  "LATENCY LATEST", "BGREWRITEAOF"]


def denied_names(docs: dict[bytes, Any]) -> set[str]:
    """The command (or ``container|sub``) names of MUST_BE_DENIED that this server has."""
    names = set()
    for call in MUST_BE_DENIED:
        words = call.lower().split()
        doc = docs.get(words[0].encode())
        if doc is None:
            continue
        subs = doc.get(b"subcommands")
        if subs is not None and len(words) > 1 and f"{words[0]}|{words[1]}".encode() in subs:
            names.add(f"{words[0]}|{words[1]}")
        elif subs is None:
            names.add(words[0])
    return names


def command_docs(root: redis.Redis) -> dict[bytes, Any]:
    root.response_callbacks.pop("COMMAND", None)
    docs: dict[bytes, Any] = root.execute_command("COMMAND", "DOCS")
    listed = {n.lower() for n in root.execute_command("COMMAND", "LIST")}
    documented = set(docs) | {sub for doc in docs.values() for sub in doc.get(b"subcommands", {})}
    assert listed <= documented  # every command of COMMAND LIST is walked
    return docs


@pytest.fixture(scope="module")
def seeded(proc: HotkvProcess) -> redis.Redis:
    root = proc.client(protocol=3, password="root-pw")
    seed(login(proc, "tenant-a"), "tenant-a")
    seed(login(proc, "tenant-b"), "tenant-b", n=3)
    return root


def test_the_template_denies_what_cannot_be_confined(proc: HotkvProcess, seeded: redis.Redis) -> None:
    docs = command_docs(seeded)
    b = login(proc, "tenant-b")
    tried = 0
    for call in MUST_BE_DENIED:
        words = call.split()
        if words[0].lower().encode() not in docs:
            continue  # a command this server does not have (yet)
        tried += 1
        with pytest.raises(redis.exceptions.NoPermissionError):
            b.execute_command(*words)
    assert tried >= 15
    assert seeded.ping()  # SHUTDOWN and DEBUG were refused, not run
    # and the rest of the tenant's work is allowed
    assert b.execute_command("AMEM.WORK.GET", "tenant-b:s0", "k") == b"note of tenant-b"
    assert b.get("tenant-b:cache:0") == b"value of tenant-b"


#: answered with a push frame (RESP3) when not subscribed, as in Redis: read as the reply
_PUSH_REPLIES = {"unsubscribe", "punsubscribe", "sunsubscribe"}


def _raw(conn: Any, *argv: Any) -> Any:
    conn.send_command(*argv)
    try:
        return conn.read_response(push_request=str(argv[0]).lower() in _PUSH_REPLIES)
    except redis.exceptions.ResponseError as exc:
        return exc


#: after these the connection is in another state (logged out, RESP version, subscribed):
#: the walk goes on with a fresh one
_RESETS = {"hello", "reset", "auth", "quit", "subscribe", "psubscribe", "ssubscribe", "multi",
           "exec", "discard", "watch"}


@pytest.mark.timeout(300)
def test_no_command_shows_tenant_b_anything_of_tenant_a(proc: HotkvProcess, seeded: redis.Redis) -> None:
    root = seeded
    docs = command_docs(root)
    denied = denied_names(docs)
    answered = 0
    found: list[str] = []
    keep_a = login(proc, "tenant-a")  # a live tenant-a client (CLIENT LIST would show it)
    keep_a.execute_command("AMEM.CONV.WINDOW", "tenant-a:s0")
    b = login(proc, "tenant-b", protocol=3)
    conn = b.connection_pool.get_connection()
    # blocking commands (BLPOP ...) wait for their timeout on a missing key: they are
    # walked inside MULTI only, where they answer at once as their non-blocking forms
    blocking = {n.lower() for n in root.execute_command("COMMAND", "LIST", "FILTERBY", "ACLCAT", "blocking")}
    for argv in calls(docs):
        name = "|".join(argv[:2]).lower()
        if argv[0].lower() in denied or name in denied:
            continue  # refused as a whole (test above): calling SHUTDOWN would end the walk
        for wrapped in ((True,) if argv[0].lower().encode() in blocking or argv[0].lower() in blocking
                        else (False, True)):
            try:
                if wrapped:
                    _raw(conn, "MULTI")
                    queued = _raw(conn, *argv)
                    reply: Any = [queued, _raw(conn, "EXEC")]
                else:
                    reply = _raw(conn, *argv)
                    if not isinstance(reply, BaseException):
                        answered += 1
            except (redis.exceptions.TimeoutError, redis.exceptions.ConnectionError) as exc:
                reply = exc
                conn.disconnect()  # a blocking command (or QUIT): go on with a fresh one
            if leaks(reply, argv):
                found.append(f"{'MULTI ' if wrapped else ''}{argv!r} -> {reply!r:.300}")
            if argv[0].lower() in _RESETS or (wrapped and isinstance(reply, list) and isinstance(reply[1], BaseException)):
                conn.disconnect()
    b.connection_pool.release(conn)
    b.close()
    keep_a.close()
    assert not found, "tenant-b saw tenant-a's data:\n" + "\n".join(found[:20])
    assert answered > 200  # the walk really ran commands, not only errors
    assert root.ping()  # and the server is still there


@pytest.mark.parametrize("store", STORES)
def test_amem_scan_cursors_carry_nothing_of_another_tenant(proc: HotkvProcess, seeded: redis.Redis,
                                                            store: str) -> None:
    seeded.flushall()
    seed(login(proc, "tenant-a"), "tenant-a")
    b = login(proc, "tenant-b", protocol=2)
    seed(b, "tenant-b", n=3)
    seen: list[bytes] = []
    cursor: Any = 0
    for _ in range(100):
        cursor, ids = b.execute_command("AMEM.SCAN", cursor, "TYPE", store, "COUNT", 1)
        assert not leaks(cursor) and not leaks(ids)
        seen.extend(ids)
        if cursor == b"0":
            break
    # COUNT 1 and every id is tenant-b's: the walk never looked at tenant-a's ids
    assert len(seen) == 3 and all(i.startswith(b"tenant-b:") for i in seen)


def _walk(client: redis.Redis, *argv: Any) -> list[Any]:
    steps: list[Any] = []
    cursor: Any = 0
    for _ in range(1000):
        cursor, ids = client.execute_command(argv[0], cursor, *argv[1:])
        steps.append((cursor, sorted(ids)))
        if cursor in (0, b"0"):
            return steps
    raise AssertionError("the walk did not end")


def test_walks_do_not_depend_on_another_tenants_ids(proc: HotkvProcess) -> None:
    """The same walk, replies and cursors byte for byte, with and without tenant-a's data."""
    root = proc.client(protocol=3, password="root-pw")
    root.flushall()
    b = login(proc, "tenant-b", protocol=2)
    seed(b, "tenant-b", n=4)
    walks = [("AMEM.SCAN", "TYPE", store, "COUNT", n) for store in STORES for n in (1, 3)]
    walks += [("SCAN", "COUNT", n) for n in (1, 2, 10)]
    alone = [_walk(b, *w) for w in walks]
    alone_counts = (b.dbsize(), sorted(b.execute_command("SCAN", 0, "COUNT", 1000)[1]))
    seed(login(proc, "tenant-a"), "tenant-a", n=40)
    beside = [_walk(b, *w) for w in walks]
    assert beside == alone
    assert (b.dbsize(), sorted(b.execute_command("SCAN", 0, "COUNT", 1000)[1])) == alone_counts
    assert alone_counts[0] == 4
    assert root.dbsize() == 44  # the root user still counts every key


def test_forged_and_foreign_cursors_are_refused(proc: HotkvProcess) -> None:
    root = proc.client(protocol=3, password="root-pw")
    root.flushall()
    a = login(proc, "tenant-a", protocol=2)
    b = login(proc, "tenant-b", protocol=2)
    seed(a, "tenant-a", n=4)
    seed(b, "tenant-b", n=4)
    a_cursor, _ = a.execute_command("AMEM.SCAN", 0, "TYPE", "SUMMARY", "COUNT", 1)
    b_cursor, _ = b.execute_command("AMEM.SCAN", 0, "TYPE", "SUMMARY", "COUNT", 1)
    expected = "expected 0 or a cursor returned by AMEM.SCAN"
    forged = [
        a_cursor,  # tenant-a's own cursor
        b"tenant-a:agent0".hex().encode(),  # the old spelling of a position in tenant-a's range
        b_cursor[:-1] + (b"A" if b_cursor[-1:] != b"A" else b"B"),  # one character changed
        b_cursor + b"AA",
    ]
    for cursor in forged:
        for wrapped in (False, True):
            if wrapped:
                pipe = b.pipeline(transaction=True)
                pipe.execute_command("AMEM.SCAN", cursor, "TYPE", "SUMMARY")
                (reply,) = pipe.execute(raise_on_error=False)
                assert isinstance(reply, redis.ResponseError) and expected in str(reply)
            else:
                with pytest.raises(redis.ResponseError, match=expected):
                    b.execute_command("AMEM.SCAN", cursor, "TYPE", "SUMMARY")
    # a cursor is bound to its store too
    with pytest.raises(redis.ResponseError, match=expected):
        b.execute_command("AMEM.SCAN", b_cursor, "TYPE", "CONV")
    # and b's own cursor goes on inside MULTI as outside
    pipe = b.pipeline(transaction=True)
    pipe.execute_command("AMEM.SCAN", b_cursor, "TYPE", "SUMMARY", "COUNT", 100)
    ((cursor, ids),) = pipe.execute()
    assert cursor == b"0" and ids == [b"tenant-b:agent1", b"tenant-b:agent2", b"tenant-b:agent3"]


def test_key_listing_commands_see_only_the_tenants_keys(proc: HotkvProcess) -> None:
    root = proc.client(protocol=3, password="root-pw")
    root.flushall()
    root.execute_command("ACL", "SETUSER", "lister", "on", ">pw", "~tenant-b:*", "+@all")
    lister = proc.client(protocol=2, username="lister", password="pw")  # KEYS allowed here
    seed(login(proc, "tenant-a"), "tenant-a", n=30)
    seed(login(proc, "tenant-b"), "tenant-b", n=3)
    mine = {b"tenant-b:cache:%d" % i for i in range(3)}
    assert set(lister.keys("*")) == mine
    assert set(lister.keys("tenant-a:*")) == set()
    assert lister.dbsize() == 3
    assert {lister.randomkey() for _ in range(50)} <= mine
    assert set(lister.scan_iter(count=2)) == mine
    pipe = lister.pipeline(transaction=True)
    pipe.keys("*").dbsize().randomkey().scan(0, count=1000)
    keys, size, rnd, (_, scanned) = pipe.execute()
    assert set(keys) == mine and size == 3 and rnd in mine and set(scanned) == mine
    # a user allowed every key sees every key, as in Redis
    assert root.dbsize() == 33 and len(root.keys("*")) == 33
