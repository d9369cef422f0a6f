"""The one clock of a server, injectable so tests can move time by hand."""

from __future__ import annotations

import time


class Clock:
    """Wall-clock milliseconds since the Unix epoch (deadlines are absolute)."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def now_us(self) -> int:
        """Microseconds (TIME's resolution)."""
        return time.time_ns() // 1_000


class ManualClock(Clock):
    """A clock that only moves when told to (tests)."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self.value = start_ms

    def now_ms(self) -> int:
        return self.value

    def now_us(self) -> int:
        return self.value * 1000

    def advance(self, ms: int) -> None:
        self.value += ms
