"""A transport for in-process clients (``ClientProtocol`` without a socket) that records,
for every write, how many bytes the AOF file held at that moment: the tests of when
replies and the replication stream leave relative to the AOF write use it."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any


class RecordingTransport:
    """Appends ``(name, data, AOF size)`` to ``log`` for every write (size -1 while
    ``aof_path()`` is None: no AOF file yet)."""

    def __init__(self, name: str, log: list[tuple[str, bytes, int]],
                 aof_path: Callable[[], str | None]) -> None:
        self.name, self.log, self.aof_path = name, log, aof_path

    def write(self, data: bytes) -> None:
        path = self.aof_path()
        self.log.append((self.name, data, os.path.getsize(path) if path else -1))

    def get_extra_info(self, name: str) -> Any:
        return ("127.0.0.1", 40000)

    def set_write_buffer_limits(self, high: int) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass
