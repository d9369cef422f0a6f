"""redis-cli's interactive hints, read from a real redis-cli on a terminal (a pty).

redis-cli 7 builds the grey hint it shows after a command name from ``COMMAND DOCS``; a
vector written ``v1 ... vdim`` in the syntax must be one repeated argument there, not an
argument ``v1`` repeated and then an argument ``vdim``.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import termios
import time
from collections.abc import Iterator

import pytest

from helpers import HotkvProcess, require_tool

_ANSI = re.compile(rb"\x1b\[[0-9;]*[A-Za-z]")


def typed_hint(port: int, command: str) -> str:
    """What redis-cli shows after ``command`` and a space: the hint's text."""
    binary = require_tool("redis-cli")
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child becomes redis-cli
        os.environ["TERM"] = "xterm"
        os.execv(binary, [binary, "-p", str(port)])
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 400, 0, 0))
    out = bytearray()

    def pump(seconds: float, until: bytes | None = None, since: int = 0) -> None:
        """Read the terminal for ``seconds``, or until ``until`` shows after offset ``since``."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if until is not None and until in out[since:]:
                return
            ready, _, _ = select.select([fd], [], [], 0.05)
            if not ready:
                continue
            try:
                data = os.read(fd, 65536)
            except OSError:
                return
            out.extend(data)
            for _ in range(data.count(b"\x1b[6n")):  # linenoise asks where the cursor is
                os.write(fd, b"\x1b[1;1R")

    try:
        pump(10.0, until=b"> ")  # the prompt: redis-cli has read COMMAND DOCS by then
        for char in command.encode():
            os.write(fd, bytes([char]))
            pump(0.03)
        typed = len(out)
        os.write(fd, b" ")
        pump(10.0, until=b"\x1b[0;90;49m", since=typed)  # the hint's grey
        pump(0.1)  # the rest of that redraw
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(fd)
    # the last redraw: prompt, the typed text, then the hint in grey (ESC[0;90;49m)
    last = bytes(out).rsplit(b"\x1b[0K", 1)[-1]
    hint = last.split(b"\x1b[0;90;49m", 1)
    assert len(hint) == 2, f"no hint shown: {bytes(out)[-300:]!r}"
    return _ANSI.sub(b"", hint[1]).split(b"\r")[0].decode().strip()


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    proc = HotkvProcess().start()
    try:
        yield proc.port
    finally:
        proc.cleanup()


@pytest.mark.parametrize("command,start", [
    ("AMEM.SEM.RECALL", "ns k FP32 blob|v [v ...]|TEXT query [MINSIM x]"),
    ("AMEM.SEM.STORE", "ns id text [FP32 blob|v [v ...]] [NX|XX]"),
    ("AMEM.SEM.SEARCH", "ns k TEXT query [VECTOR FP32 blob|v [v ...]]"),
])
def test_vector_hint_shows_one_repeated_value(port: int, command: str, start: str) -> None:
    hint = typed_hint(port, command)
    assert "vdim" not in hint and "v1" not in hint
    assert hint.startswith(start), hint


def test_other_hints_are_unchanged(port: int) -> None:
    assert typed_hint(port, "AMEM.SCAN") == (
        "cursor TYPE CONV|SEM|WORK|EPIS|SUMMARY [MATCH glob] [COUNT n]")
    assert typed_hint(port, "DEL") == "key [key ...]"
