"""``python -m hotkv_server.clients.healthcheck``: exit 0 when a hotkv server answers PING.

The container's HEALTHCHECK, usable anywhere (``redis-cli ping`` is not in the image).
It reads the same environment as the container: ``HOTKV_PORT`` (6379), ``HOTKV_HOST``
(127.0.0.1) and ``HOTKV_REQUIREPASS`` (or the file ``HOTKV_REQUIREPASS_FILE`` names); ``--host``, ``--port``, ``--password`` and
``--timeout`` override them. Exit status: 0 healthy, 1 not (the reason on stderr).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from hotkv_server.clients.entrypoint import EntrypointError, password_from_file


def check(host: str, port: int, password: str | None, timeout: float) -> str | None:
    """None when the server answers PING with PONG, else why not."""
    client = redis.Redis(host=host, port=port, password=password or None,
                         socket_timeout=timeout, socket_connect_timeout=timeout,
                         retry=Retry(NoBackoff(), 0), protocol=2)
    try:
        reply = client.execute_command("PING")
    except redis.RedisError as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        client.close()
    if reply not in (True, b"PONG", "PONG"):
        return f"unexpected PING reply {reply!r}"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    env = os.environ
    parser = argparse.ArgumentParser(prog="python -m hotkv_server.clients.healthcheck",
                                     description="Exit 0 when hotkv answers PING.")
    parser.add_argument("--host", default=env.get("HOTKV_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(env.get("HOTKV_PORT", "6379")))
    parser.add_argument("--password", default=None)
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds")
    args = parser.parse_args(argv)
    password = args.password
    if password is None:
        try:
            password = password_from_file(env) or env.get("HOTKV_REQUIREPASS")
        except EntrypointError as exc:
            print(f"hotkv health check: {exc}", file=sys.stderr)
            return 1
    problem = check(args.host, args.port, password, args.timeout)
    if problem is not None:
        print(f"hotkv at {args.host}:{args.port} is not healthy: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
