"""ACL users, AUTH, protected mode: through a real server process."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from helpers import HotkvProcess, RedisServer, raw_roundtrip


@pytest.fixture(scope="module")
def secured() -> HotkvProcess:
    proc = HotkvProcess("--requirepass", "s3cret").start()
    yield proc
    proc.cleanup()


def admin(proc: HotkvProcess, protocol: int = 3) -> redis.Redis:
    return proc.client(protocol=protocol, password="s3cret")


def test_noauth_before_auth_and_wrongpass_wording(secured: HotkvProcess) -> None:
    reply = raw_roundtrip(secured.port, b"PING\r\nAUTH nope\r\nAUTH s3cret\r\nPING\r\n")
    assert reply == (
        b"-NOAUTH Authentication required.\r\n"
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
        b"+OK\r\n+PONG\r\n"
    )


def test_hello_with_auth(secured: HotkvProcess) -> None:
    reply = raw_roundtrip(secured.port, b"HELLO 3 AUTH default wrong\r\nHELLO 3 AUTH default s3cret\r\nPING\r\n")
    assert reply.startswith(b"-WRONGPASS invalid username-password pair or user is disabled.\r\n%8\r\n")
    assert reply.endswith(b"+PONG\r\n")


def test_unauthenticated_big_request_is_refused(secured: HotkvProcess) -> None:
    reply = raw_roundtrip(secured.port, b"*20\r\n$3\r\nSET\r\n")
    assert reply == b"-ERR Protocol error: unauthenticated multibulk length\r\n"
    reply = raw_roundtrip(secured.port, b"*2\r\n$100000\r\n")
    assert reply == b"-ERR Protocol error: unauthenticated bulk length\r\n"


@pytest.mark.parametrize("protocol", [2, 3])
def test_tenant_users_are_confined(secured: HotkvProcess, protocol: int) -> None:
    root = admin(secured, protocol)
    root.execute_command("ACL", "SETUSER", "tenant-a", "on", ">pa", "~tenant-a:*", "+@all", "-@dangerous")
    root.execute_command("ACL", "SETUSER", "tenant-b", "on", ">pb", "~tenant-b:*", "+@all", "-@dangerous")
    root.execute_command("ACL", "LOG", "RESET")
    a = secured.client(protocol=protocol, username="tenant-a", password="pa")
    b = secured.client(protocol=protocol, username="tenant-b", password="pb")
    assert a.set("tenant-a:k", "1") is True
    assert b.set("tenant-b:k", "2") is True
    with pytest.raises(redis.exceptions.NoPermissionError, match="keys used as arguments"):
        a.get("tenant-b:k")
    with pytest.raises(redis.exceptions.NoPermissionError):
        b.set("tenant-a:k", "x")
    with pytest.raises(redis.exceptions.NoPermissionError, match="'flushall' command"):
        a.flushall()
    assert root.get("tenant-a:k") == b"1"
    entries = root.execute_command("ACL", "LOG")
    reasons = sorted((_field(e, "reason"), _field(e, "username")) for e in entries)
    assert (b"key", b"tenant-a") in reasons or ("key", "tenant-a") in reasons
    assert any(_field(e, "object") in (b"flushall", "flushall") for e in entries)
    assert a.execute_command("ACL", "WHOAMI") == b"tenant-a"


def _field(entry: object, name: str) -> object:
    if isinstance(entry, dict):
        return entry.get(name, entry.get(name.encode()))
    items = list(entry)  # type: ignore[call-overload]
    pairs = dict(zip(items[::2], items[1::2], strict=True))
    return pairs.get(name.encode(), pairs.get(name))


def test_read_only_user_cannot_write(secured: HotkvProcess) -> None:
    root = admin(secured)
    root.execute_command("ACL", "SETUSER", "reader", "on", ">r", "%R~*", "+@read", "+@connection")
    root.set("shared", "v")
    reader = secured.client(username="reader", password="r")
    assert reader.get("shared") == b"v"
    with pytest.raises(redis.exceptions.NoPermissionError, match="'set' command"):
        reader.set("shared", "w")


def test_write_only_pattern_needs_write_permission(secured: HotkvProcess) -> None:
    root = admin(secured)
    root.execute_command("ACL", "SETUSER", "writer", "on", ">w", "%W~out:*", "+@all")
    writer = secured.client(username="writer", password="w")
    assert writer.set("out:1", "x") is True
    with pytest.raises(redis.exceptions.NoPermissionError):
        writer.get("out:1")


def test_multi_with_denied_key_aborts(secured: HotkvProcess) -> None:
    root = admin(secured)
    root.execute_command("ACL", "SETUSER", "tx", "on", ">t", "~mine:*", "+@all")
    reply = raw_roundtrip(
        secured.port,
        b"AUTH tx t\r\nMULTI\r\nSET mine:1 a\r\nSET theirs:1 b\r\nEXEC\r\n",
    )
    assert reply == (
        b"+OK\r\n+OK\r\n+QUEUED\r\n"
        b"-NOPERM this user has no permissions to access one of the keys used as arguments\r\n"
        b"-EXECABORT Transaction discarded because of previous errors.\r\n"
    )
    assert root.get("mine:1") is None


def test_setuser_errors_and_getuser(secured: HotkvProcess) -> None:
    root = admin(secured, 2)
    with pytest.raises(redis.ResponseError, match="Error in ACL SETUSER modifier 'bogus'"):
        root.execute_command("ACL", "SETUSER", "x", "bogus")
    with pytest.raises(redis.ResponseError, match="Unknown command"):
        root.execute_command("ACL", "SETUSER", "x", "+nosuchcommand")
    root.execute_command("ACL", "SETUSER", "viewer", "on", "nopass", "~a:*", "+get")
    info = root.execute_command("ACL", "GETUSER", "viewer")
    pairs = dict(zip(info[::2], info[1::2], strict=True))
    assert pairs[b"flags"] == [b"on", b"nopass"]
    assert pairs[b"keys"] == b"~a:*"
    assert pairs[b"commands"] == b"-@all +get"
    assert root.execute_command("ACL", "GETUSER", "nobody") is None
    assert b"viewer" in root.execute_command("ACL", "USERS")
    assert root.execute_command("ACL", "DELUSER", "viewer", "nobody") == 1
    with pytest.raises(redis.ResponseError, match="'default' user cannot be removed"):
        root.execute_command("ACL", "DELUSER", "default")


def test_disabled_user_cannot_log_in(secured: HotkvProcess) -> None:
    root = admin(secured)
    root.execute_command("ACL", "SETUSER", "sleeper", "off", ">z", "~*", "+@all")
    with pytest.raises(redis.AuthenticationError):
        secured.client(username="sleeper", password="z").ping()


def test_acl_cat_lists_amem_categories(secured: HotkvProcess) -> None:
    root = admin(secured, 2)
    cats = root.execute_command("ACL", "CAT")
    for name in (b"read", b"write", b"string", b"connection", b"admin"):
        assert name in cats
    assert b"get" in root.execute_command("ACL", "CAT", "read")


def test_aclfile_save_and_load(tmp_path: object) -> None:
    import os

    path = os.path.join(str(tmp_path), "users.acl")
    with open(path, "w") as fh:
        fh.write("user default on nopass ~* &* +@all\nuser bob on >b ~bob:* +@all\n")
    proc = HotkvProcess("--aclfile", path).start()
    try:
        bob = proc.client(username="bob", password="b")
        assert bob.set("bob:1", "x") is True
        root = proc.client()
        root.execute_command("ACL", "SETUSER", "carol", "on", ">c", "~c:*", "+get")
        assert root.execute_command("ACL", "SAVE") == b"OK"
        with open(path) as fh:
            text = fh.read()
        assert "user carol on #" in text and "~c:*" in text
        proc.restart()
        carol = proc.client(username="carol", password="c")
        assert carol.get("c:1") is None
    finally:
        proc.cleanup()


def test_user_directive_on_command_line() -> None:
    proc = HotkvProcess("--user", "agent", "on", ">pw", "~agent:*", "+@all").start()
    try:
        agent = proc.client(username="agent", password="pw")
        assert agent.set("agent:x", "1") is True
        with pytest.raises(redis.exceptions.NoPermissionError):
            agent.set("other", "1")
    finally:
        proc.cleanup()


def _non_loopback_ip() -> str | None:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("10.255.255.255", 1))  # no packet is sent for UDP connect
            ip = probe.getsockname()[0]
    except OSError:
        return None
    return None if ip.startswith("127.") else ip


def test_protected_mode_refuses_non_loopback_without_password() -> None:
    ip = _non_loopback_ip()
    if ip is None:
        pytest.skip("this machine has no non-loopback address to connect from")
    proc = HotkvProcess("--bind", "0.0.0.0").start()
    try:
        with socket.create_connection((ip, proc.port), timeout=3) as sock:
            sock.sendall(b"PING\r\n")
            data = sock.recv(4096)
        assert data.startswith(b"-DENIED")
        assert proc.client().ping() is True  # loopback still served
    finally:
        proc.cleanup()


def test_config_set_requirepass_changes_the_default_password() -> None:
    proc = HotkvProcess().start()
    try:
        client = proc.client()
        assert client.config_set("requirepass", "newpass") is True
        assert raw_roundtrip(proc.port, b"PING\r\nAUTH newpass\r\nPING\r\n") == (
            b"-NOAUTH Authentication required.\r\n+OK\r\n+PONG\r\n"
        )
    finally:
        proc.cleanup()


#: calls whose key permissions differ by the key spec flags (Redis 7 takes them from there)
KEY_PERMISSION_CALLS = [
    "GET w1", "GET r1", "SET r1 v", "SET w1 v", "SET w1 v GET", "SET b1 v GET", "EXISTS w1",
    "EXISTS r1", "INCR w1", "INCR b1", "INCR x1", "INCR d1", "DEL r1", "DEL w1", "STRLEN w1",
    "TYPE r1", "TTL w1", "EXPIRE w1 10", "MSET w1 a w2 b", "MSET w1 a r1 b", "MGET r1 w1",
    "MGET r1 r2", "PERSIST w1", "PEXPIREAT w1 1",
]


@pytest.fixture(scope="module")
def plain() -> Iterator[HotkvProcess]:
    """A server without a password, for the tests that compare with redis-server."""
    proc = HotkvProcess().start()
    yield proc
    proc.cleanup()


def test_key_permissions_follow_key_specs_as_redis(reference: RedisServer,
                                                   plain: HotkvProcess) -> None:
    """%R~ / %W~ patterns against the key spec flags of each call, compared with a real
    redis-server 7: reads (access) need R, writes (insert/delete/update) need W, a key only
    looked at (EXISTS, TYPE, STRLEN) needs either, and both must come from one pattern
    (a pattern named with %R~ and again with %W~ holds both)."""
    outcomes = []
    for port in (reference.port, plain.port):
        root = redis.Redis(port=port)
        root.flushall()
        root.execute_command("ACL", "SETUSER", "u", "reset", "on", "nopass", "+@all",
                             "%R~r*", "%W~w*", "~x*", "%R~b*", "%W~b*", "%R~d*", "%W~d1")
        user = redis.Redis(port=port, username="u", password="x")
        seen = []
        for call in KEY_PERMISSION_CALLS:
            try:
                user.execute_command(*call.split())
                seen.append((call, "allowed"))
            except redis.ResponseError as exc:
                assert "unknown command" not in str(exc)
                seen.append((call, "NOPERM" if "no permissions" in str(exc) else "allowed"))
        outcomes.append(seen)
        assert root.execute_command("ACL", "GETUSER", "u")[b"keys"] == \
            b"%R~r* %W~w* ~x* ~b* %R~d* %W~d1"
    assert outcomes[1] == outcomes[0]
    assert ("EXISTS w1", "allowed") in outcomes[1] and ("INCR d1", "NOPERM") in outcomes[1]


#: ACL DRYRUN calls: allowed, a command the user lacks, key denials by permission, and
#: calls that are no command (unknown, unknown subcommand, wrong number of arguments)
DRYRUN_CALLS = [
    "GET r1", "GET w1", "SET w1 v", "SET r1 v", "SET w1 v GET", "EXISTS w1", "INCR b1",
    "INCR d1", "MGET r1 w1", "MSET w1 a r1 b", "FLUSHALL", "PING", "GET other",
    "NOSUCH x", "CONFIG NOSUCH", "GET", "CONFIG GET",
]


def dryrun(client: redis.Redis, call: str) -> Any:
    try:
        return client.execute_command("ACL", "DRYRUN", "u", *call.split())
    except redis.ResponseError as exc:
        return f"error: {exc}"


def test_acl_dryrun_answers_as_redis(reference: RedisServer, plain: HotkvProcess) -> None:
    """ACL DRYRUN gives the permission check's verdict without running the call (OK, the
    denied command, or the first denied key), the same replies and errors as redis-server
    7 in RESP2 and RESP3, and logs nothing in ACL LOG."""
    answers = []
    for port in (reference.port, plain.port):
        for protocol in (2, 3):
            root = redis.Redis(port=port, protocol=protocol)
            root.flushall()
            root.execute_command("ACL", "SETUSER", "u", "reset", "on", "nopass", "+@all",
                                 "-flushall", "%R~r*", "%W~w*", "%R~b*", "%W~b*", "%R~d*",
                                 "%W~d1")
            root.execute_command("ACL", "LOG", "RESET")
            answers.append([dryrun(root, call) for call in DRYRUN_CALLS])
            assert root.execute_command("ACL", "LOG") == []
            assert root.get("w1") is None  # nothing ran
            root.close()
    assert answers[2] == answers[0] and answers[3] == answers[1]
    verdicts = dict(zip(DRYRUN_CALLS, answers[3], strict=True))
    assert verdicts["GET r1"] == b"OK"
    assert verdicts["FLUSHALL"] == b"This user has no permissions to run the 'flushall' command"
    assert verdicts["MGET r1 w1"] == b"This user has no permissions to access the 'w1' key"
    assert verdicts["CONFIG NOSUCH"] == "error: Command 'CONFIG' not found"
    assert verdicts["GET"] == "error: wrong number of arguments for 'get' command"
