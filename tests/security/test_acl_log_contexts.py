"""ACL LOG names where a denial happened (top level, MULTI/EXEC, a script) as Redis 7 does:
the same calls against hotkv and a real redis-server leave the same entries."""

from __future__ import annotations

from typing import Any

import redis

from helpers import HotkvProcess, RedisServer

SCRIPT = "return redis.call('SET', KEYS[1], 'x')"


def _entries(port: int) -> list[dict[str, Any]]:
    admin = redis.Redis(port=port, decode_responses=True)
    admin.execute_command("ACL", "LOG", "RESET")
    admin.execute_command("ACL", "SETUSER", "scripter", "reset", "on", ">pw", "~*", "+eval", "+get",
                          "+multi", "+exec")
    try:
        user = redis.Redis(port=port, username="scripter", password="pw", decode_responses=True,
                           lib_name=None, lib_version=None)  # no CLIENT SETINFO (7.2, not in 7.0)
        errors = []
        for call in (lambda: user.eval(SCRIPT, 1, "k"), lambda: user.set("k", "v")):
            try:
                call()
            except redis.ResponseError as exc:
                errors.append(str(exc).split()[0])
        with user.pipeline(transaction=True) as tx:
            tx.get("k")
            tx.execute_command("SET", "k", "v")
            try:
                tx.execute()
            except redis.ResponseError as exc:
                errors.append(str(exc).split()[0])
        raw = admin.execute_command("ACL", "LOG")
        entries = [dict(zip(e[::2], e[1::2], strict=True)) if isinstance(e, list) else e for e in raw]
        keep = ("count", "reason", "context", "object", "username")
        return [{k: entry[k] for k in keep} for entry in entries] + [{"errors": errors}]
    finally:
        admin.execute_command("ACL", "DELUSER", "scripter")
        admin.execute_command("ACL", "LOG", "RESET")


def test_acl_log_contexts_match_redis(server: HotkvProcess, reference: RedisServer) -> None:
    ours, theirs = _entries(server.port), _entries(reference.port)
    assert ours == theirs
    contexts = [e.get("context") for e in ours[:-1]]
    assert "lua" in contexts and "toplevel" in contexts
