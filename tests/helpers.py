"""Test helpers: a real hotkv-server process on a free port, and reply normalisation."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import hiredis
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

ROOT = Path(__file__).resolve().parent.parent
READY = re.compile(r"ready to accept connections on .* port (\d+)(?: tls-port (\d+))?")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def quick_retry() -> Retry:
    """One immediate retry: a client still reconnects once to a restarted server, but a
    refused login or a server that is gone fails at once. (redis-py 7+ retries three times
    with backoff by default, and counts a refused AUTH as a connection error: 4 s a test.)"""
    return Retry(NoBackoff(), 1)


class HotkvProcess:
    """A ``python -m hotkv_server`` child process; ``start()`` waits until it accepts connections."""

    def __init__(self, *args: str, dir: str | None = None, port: int = 0,
                 config_file: str | None = None) -> None:
        self.args = list(args)
        self.config_file = config_file
        self._tmp = None if dir else tempfile.TemporaryDirectory(prefix="hotkv-test-")
        self.dir = dir or self._tmp.name  # type: ignore[union-attr]
        self.port = port
        self.tls_port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.logfile = os.path.join(self.dir, "hotkv.log")

    def command_line(self) -> list[str]:
        has = set(self.args)
        cmd = [sys.executable, "-m", "hotkv_server"]
        if self.config_file:
            cmd.append(self.config_file)
        cmd += ["--port", str(self.port), "--dir", self.dir,
               "--logfile", self.logfile, "--bind", "127.0.0.1"]
        if "--appendonly" not in has:
            cmd += ["--appendonly", "no"]
        return cmd + self.args

    def start(self, timeout: float = 15.0) -> HotkvProcess:
        offset = os.path.getsize(self.logfile) if os.path.exists(self.logfile) else 0
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = subprocess.Popen(self.command_line(), env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise RuntimeError(f"hotkv-server exited with {self.proc.returncode}: {err}\n{self.log()}")
            text = self.log()[offset:] if os.path.exists(self.logfile) else ""
            match = READY.search(text)
            if match:
                self.port = int(match.group(1))
                if match.group(2):
                    self.tls_port = int(match.group(2))
                return self
            time.sleep(0.02)
        self.kill()
        raise RuntimeError(f"hotkv-server did not start in {timeout}s:\n{self.log()}")

    def log(self) -> str:
        try:
            return Path(self.logfile).read_text(errors="replace")
        except OSError:
            return ""

    def client(self, protocol: int = 3, **kwargs: Any) -> redis.Redis:
        kwargs.setdefault("retry", quick_retry())
        return redis.Redis(host="127.0.0.1", port=self.port, protocol=protocol, **kwargs)

    def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM and wait: a clean shutdown."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()
        self.proc = None
        return code

    def kill(self) -> None:
        """SIGKILL: a crash."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            if self.proc.stderr:
                self.proc.stderr.close()
            self.proc = None

    def restart(self) -> HotkvProcess:
        """Stop cleanly and start again on the same port and directory."""
        self.stop()
        return self.start()

    def cleanup(self) -> None:
        self.kill()
        if self._tmp is not None:
            self._tmp.cleanup()


def record(reply: Any) -> dict[Any, Any]:
    """A RESP3 map or a RESP2 flat array -> dict, so one assertion fits both protocols."""
    if isinstance(reply, dict):
        return reply
    if isinstance(reply, list):
        if len(reply) % 2:
            raise AssertionError(f"not a flat field/value array: {reply!r}")
        return {reply[i]: reply[i + 1] for i in range(0, len(reply), 2)}
    raise AssertionError(f"not a record: {reply!r}")


def records(reply: Iterable[Any]) -> list[dict[Any, Any]]:
    return [record(item) for item in reply]


def as_float(value: Any) -> float:
    """A RESP3 double or a RESP2 bulk string -> float."""
    if isinstance(value, bytes):
        return float(value)
    return float(value)


def raw_reply(client: redis.Redis, *args: Any) -> Any:
    """One command's reply as parsed, without redis-py's response callback."""
    conn = client.connection_pool.get_connection()
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        client.connection_pool.release(conn)


def resp_request(*args: str) -> bytes:
    """The canonical RESP encoding of one request (for raw_roundtrip)."""
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a.encode()) for a in args)


def raw_roundtrip(port: int, payload: bytes, *, wait: float = 0.3, expect: int | None = None) -> bytes:
    """Send raw bytes, return everything the server answered until it is quiet or closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(payload)
        sock.settimeout(wait)
        chunks = []
        total = 0
        while True:
            try:
                data = sock.recv(65536)
            except TimeoutError:
                break
            except ConnectionResetError:
                break
            if not data:
                break
            chunks.append(data)
            total += len(data)
            if expect is not None and total >= expect:
                break
        return b"".join(chunks)


def drain_to_mark(listener: Any, timeout: float = 10.0) -> list[tuple[bytes, bytes]]:
    """The channel/data pairs a pub/sub listener has received, up to now.

    The listener PINGs with a fresh token and reads until that PING's answer: a server
    writes a connection's messages in order, so everything published before the PING (every
    notification of a command another client has had its reply for) comes first. No idle
    wait, so it costs a round trip, not a timeout."""
    token = f"drain-mark-{time.monotonic_ns()}".encode()
    listener.ping(token)
    out: list[tuple[bytes, bytes]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        message = listener.get_message(timeout=deadline - time.monotonic())
        if message is None:
            continue
        if message["type"] == "pong" and message["data"] == token:
            return out
        if message["type"] in ("message", "pmessage"):
            out.append((message["channel"], message["data"]))
    raise AssertionError(f"no answer to the listener's PING within {timeout}s; got {out}")


def require_tool(name: str) -> str:
    """The path of a tool the test command installs (redis-server, redis-cli ...).

    A missing one fails the test: scripts/test installs it, so a skip would hide a broken
    set-up instead of reporting it."""
    import shutil

    import pytest

    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not on PATH (apt-get install redis-server redis-tools; "
                    "scripts/test installs them)", pytrace=False)
    return path


class RedisServer:
    """A real redis-server on a free port, the reference for differential tests."""

    def __init__(self, *args: str) -> None:
        binary = require_tool("redis-server")
        self.tmp = tempfile.TemporaryDirectory(prefix="hotkv-redis-")
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.tmp.name, "--daemonize", "no", "--logfile", "",
             *args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"redis-server did not start on port {self.port}") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.tmp.cleanup()


class RawConnection:
    """One connection that returns each reply's exact bytes."""

    def __init__(self, port: int, protocol: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.pending = b""
        if protocol == 3:
            assert self.call("HELLO", "3").startswith(b"%")

    def call(self, *args: Any) -> bytes:
        words = [a if isinstance(a, bytes) else str(a).encode() for a in args]
        self.sock.sendall(b"*%d\r\n" % len(words)
                          + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in words))
        reader = hiredis.Reader()
        data = self.pending
        reader.feed(data)
        while reader.gets() is False:
            chunk = self.sock.recv(65536)
            assert chunk, "connection closed"
            data += chunk
            reader.feed(chunk)
        # one request, one reply: whatever the reader did not need stays for the next call
        self.pending = b""
        return data

    def close(self) -> None:
        self.sock.close()
