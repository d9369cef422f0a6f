"""A fake transport for driving ``ClientProtocol`` without sockets, and a request encoder."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from hotkv_server.engine.config import load_config
from hotkv_server.server.app import Server


class FakeTransport:
    """Records writes and the reading switches; its write buffer size is set by the test."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.calls: list[str] = []
        self.buffered = 0
        self.closed = False
        #: the get_extra_info names asked for
        self.asked: list[str] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def get_extra_info(self, name: str) -> Any:
        self.asked.append(name)
        if name == "peername":
            return ("127.0.0.1", 40000)
        return ("127.0.0.1", 6379) if name == "sockname" else None

    def set_write_buffer_limits(self, high: int) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return self.buffered

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True
        self.calls.append("close")

    def abort(self) -> None:
        self.closed = True
        self.calls.append("abort")

    def pause_reading(self) -> None:
        self.calls.append("pause")

    def resume_reading(self) -> None:
        self.calls.append("resume")


def request(*words: bytes) -> bytes:
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%b\r\n" % (len(w), w) for w in words)


@contextlib.asynccontextmanager
async def running_server(*args: str) -> AsyncIterator[Server]:
    """A real ``Server`` in this process, its subsystems opened and started (``args`` are
    its command line), closed at the end as a shutdown without a final save closes them."""
    server = Server(load_config(["--port", "0", *args]))
    await server._open_subsystems()
    for sub in server.subsystems:
        started = getattr(sub, "started", None)
        if started is not None:
            await started()
    try:
        yield server
    finally:
        for sub in reversed(server.subsystems):
            close = getattr(sub, "close", None)
            if close is not None:
                result = close(False)
                if asyncio.iscoroutine(result):
                    await result
