"""Fixtures shared by the persistence tests: a data directory and the servers to stop."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import HotkvProcess


@pytest.fixture
def data_dir(tmp_path: Path) -> str:
    return str(tmp_path)


@pytest.fixture
def procs() -> Iterator[list[HotkvProcess]]:
    """Servers a test started (append them): killed when it ends, whatever happened."""
    started: list[HotkvProcess] = []
    yield started
    for proc in started:
        proc.kill()
