"""The compiled hot path (mypyc) and its pure-Python fallback, both ways.

The suite runs whatever build ``scripts/test`` made (compiled where a C compiler is); these
tests start a second server with ``HOTKV_PURE=1`` and check the two answer byte for byte
alike, that the default server runs compiled wherever the build could compile (so a build
that silently broke fails here), and that edited sources never run their stale ``.so``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import hiredis
import pytest

from helpers import ROOT, HotkvProcess, RawConnection
from hotkv_server import _compiled

PKG = ROOT / "src" / "hotkv_server"

#: one request per row, run in this order on a fresh server (no TTLs, no clocks)
SCRIPT: list[tuple[str, ...]] = [
    ("PING",),
    ("SET", "k", "v1"),
    ("GET", "k"),
    ("SET", "k", "v2", "GET"),
    ("APPEND", "k", "-tail"),
    ("STRLEN", "k"),
    ("GETRANGE", "k", "1", "4"),
    ("INCR", "n"),
    ("INCRBY", "n", "41"),
    ("INCRBYFLOAT", "n", "0.5"),
    ("MSET", "a", "1", "b", "2"),
    ("MGET", "a", "b", "missing"),
    ("SETNX", "a", "x"),
    ("HSET", "h", "f1", "v1", "f2", "v2"),
    ("HGET", "h", "f1"),
    ("HGETALL", "h"),
    ("HINCRBY", "h", "c", "3"),
    ("HDEL", "h", "f2"),
    ("AMEM.WORK.SET", "s1", "ticket", "INV-1932"),
    ("AMEM.WORK.GET", "s1", "ticket"),
    ("AMEM.WORK.GET", "s1", "nope"),
    ("MULTI",),
    ("SET", "t", "1"),
    ("INCR", "t"),
    ("GET", "t"),
    ("EXEC",),
    ("DEL", "a", "b", "missing"),
    ("EXISTS", "k", "a"),
    ("TYPE", "h"),
    # error replies: a wrong type, a bad number, an arity error, an unknown command, a syntax
    # error; the connection stays usable after each
    ("INCR", "k"),
    ("INCRBY", "n2", "ten"),
    ("GET",),
    ("NOSUCHCOMMAND", "x"),
    ("SET", "k", "v", "EX"),
    ("HGET", "k", "f"),
    ("AMEM.WORK.SET", "s1"),
    ("GET", "k"),
]


def _encode(args: tuple[str, ...]) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(
        b"$%d\r\n%s\r\n" % (len(a.encode()), a.encode()) for a in args)


def _pipelined(port: int, requests: list[tuple[str, ...]]) -> bytes:
    """All requests in one write; the exact bytes of their replies."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"".join(_encode(r) for r in requests))
        reader = hiredis.Reader()
        data = b""
        replies = 0
        while replies < len(requests):
            chunk = sock.recv(65536)
            assert chunk, "connection closed"
            data += chunk
            reader.feed(chunk)
            while reader.gets() is not False:
                replies += 1
        return data


def _answers(port: int, protocol: int) -> list[bytes]:
    conn = RawConnection(port, protocol)
    try:
        assert conn.call("FLUSHALL") == b"+OK\r\n"
        return [conn.call(*request) for request in SCRIPT]
    finally:
        conn.close()


@pytest.fixture(scope="module")
def pure_server() -> Iterator[HotkvProcess]:
    saved = os.environ.get("HOTKV_PURE")
    os.environ["HOTKV_PURE"] = "1"
    try:
        proc = HotkvProcess().start()
    finally:
        if saved is None:
            del os.environ["HOTKV_PURE"]
        else:
            os.environ["HOTKV_PURE"] = saved
    try:
        yield proc
    finally:
        proc.cleanup()


def test_the_pure_server_says_so(pure_server: HotkvProcess) -> None:
    assert "hot path: pure Python (HOTKV_PURE=1)" in pure_server.log()
    info = pure_server.client().info("server")
    assert info["hot_path"] == "pure"


@pytest.mark.parametrize("protocol", [2, 3])
def test_pure_and_default_builds_answer_alike(
        server: HotkvProcess, pure_server: HotkvProcess, protocol: int) -> None:
    default = _answers(server.port, protocol)
    pure = _answers(pure_server.port, protocol)
    for request, a, b in zip(SCRIPT, default, pure, strict=True):
        assert a == b, request
    # the error rows are errors, and the connection answered the GET after them
    assert default[SCRIPT.index(("INCR", "k"))].startswith(b"-ERR value is not an integer")
    assert default[-1] == b"$7\r\nv2-tail\r\n"


def test_pure_and_default_builds_answer_a_pipeline_alike(
        server: HotkvProcess, pure_server: HotkvProcess) -> None:
    requests = [("FLUSHALL",), *SCRIPT, *[("INCR", f"p{i % 5}") for i in range(200)]]
    assert _pipelined(server.port, requests) == _pipelined(pure_server.port, requests)


def _can_compile() -> str | None:
    """Why the build step would not compile here (None: it would)."""
    try:
        import mypyc  # noqa: F401
    except ImportError:
        return "mypyc not installed"
    return _compiled.build_tools_missing()


def test_the_default_build_is_compiled_where_a_compiler_is(server: HotkvProcess) -> None:
    # where the suite is asked to run pure, or cannot compile, the server must say so
    if os.environ.get("HOTKV_PURE", "") not in ("", "0"):
        assert "hot path: pure Python (HOTKV_PURE=1)" in server.log()
        assert server.client().info("server")["hot_path"] == "pure"
        return
    missing = _can_compile()
    if missing:
        assert f"hot path: pure Python ({missing})" in server.log()
        assert server.client().info("server")["hot_path"] == "pure"
        return
    line = f"hot path: compiled (mypyc, {len(_compiled.MODULES)} modules)"
    assert line in server.log(), (
        "a C compiler is here but the server runs pure: scripts/build_compiled.py "
        "(run by scripts/test) did not build, or a listed source changed since it did\n"
        + "\n".join(ln for ln in server.log().splitlines() if "hot path" in ln))
    assert server.client().info("server")["hot_path"] == "compiled"


def _probe(package_parent: Path, *, env: dict[str, str] | None = None) -> dict[str, object]:
    code = ("import json, hotkv_server._compiled as c, hotkv_server.engine.args as a;"
            "print(json.dumps({'state': c.STATE, 'file': a.__file__,"
            " 'edited': getattr(a, 'EDITED', False)}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **(env or {}), "PYTHONPATH": str(package_parent)},
                          cwd=package_parent, check=True)
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    """A copy of the package as built (compiled files and stamp included)."""
    shutil.copytree(PKG, tmp_path / "hotkv_server",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_an_edited_source_loads_pure_not_its_stale_so(package_copy: Path) -> None:
    built = bool(_compiled.compiled_files(PKG)) and _compiled.COMPILED
    before = _probe(package_copy)
    assert str(before["file"]).startswith(str(package_copy))
    if built:
        assert str(before["state"]).startswith("compiled"), before
        assert str(before["file"]).endswith(".so")
    args = package_copy / "hotkv_server" / "engine" / "args.py"
    args.write_text(args.read_text() + "\nEDITED = True\n")
    after = _probe(package_copy)
    assert after["edited"] is True
    assert str(after["file"]).endswith("args.py")
    if built:
        assert after["state"] == "pure Python (sources changed since the build)"


def test_hotkv_pure_loads_the_sources(package_copy: Path) -> None:
    probe = _probe(package_copy, env={"HOTKV_PURE": "1"})
    assert probe["state"] == "pure Python (HOTKV_PURE=1)"
    assert str(probe["file"]).endswith("args.py")


def test_the_build_step_without_a_compiler_falls_back_pure(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "build_compiled.py", tmp_path / "scripts")
    shutil.copytree(PKG, tmp_path / "src" / "hotkv_server",
                    ignore=shutil.ignore_patterns("__pycache__"))
    # a checkout whose build is out of date (its compiled files, if any, stale)
    (tmp_path / "src" / "hotkv_server" / _compiled.STAMP.name).unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, str(tmp_path / "scripts" / "build_compiled.py")],
        capture_output=True, text=True, check=True,
        env={**os.environ, "CC": "/nonexistent/cc", "HOTKV_PURE": ""})
    assert done.stderr.strip() == "hot path: pure Python (no C compiler)"
    copy = tmp_path / "src" / "hotkv_server"
    assert _compiled.compiled_files(copy) == []
    assert _probe(tmp_path / "src")["state"] == "pure Python (no C compiler)"
    # unchanged sources and still no compiler: the same answer, no compile attempted
    again = subprocess.run(
        [sys.executable, str(tmp_path / "scripts" / "build_compiled.py")],
        capture_output=True, text=True, check=True,
        env={**os.environ, "CC": "/nonexistent/cc", "HOTKV_PURE": ""})
    assert again.stderr.strip() == "hot path: pure Python (no C compiler)"


def test_a_handler_bug_costs_one_error_reply_in_this_build(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the dispatch point's catch of an unexpected exception (compiled, a name typed by the
    # except clause before it once turned this into a TypeError)
    import asyncio

    from hotkv_server.engine.registry import LOOKUP
    from hotkv_server.server.connection import ClientProtocol
    from server.fakes import FakeTransport, request, running_server

    def boom(ctx: object, argv: object) -> object:
        raise RuntimeError("a bug")

    async def run() -> list[bytes]:
        async with running_server("--dir", str(tmp_path), "--save", "",
                                  "--appendonly", "no") as srv:
            monkeypatch.setattr(LOOKUP[b"ECHO"], "handler", boom)  # (loaded by the start)
            protocol = ClientProtocol(srv.core)
            transport = FakeTransport()
            protocol.connection_made(transport)  # type: ignore[arg-type]
            protocol.data_received(request(b"ECHO", b"x") + request(b"PING"))
            for _ in range(200):
                if transport.writes:
                    break
                await asyncio.sleep(0.005)
            return transport.writes

    assert b"".join(asyncio.run(run())) == (
        b"-ERR internal error in 'echo': RuntimeError\r\n+PONG\r\n")
