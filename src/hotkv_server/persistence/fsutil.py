"""Small file-system steps that make a change durable: fsync a directory, replace atomically."""

from __future__ import annotations

import os
from collections.abc import Callable


def fsync_dir(path: str) -> None:
    """Make renames and creations inside ``path`` durable (a new name lives in its directory)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    """os.write until everything is written (a regular file may take less than asked)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def atomic_write(path: str, data: bytes, *, renamed: Callable[[], None] | None = None) -> None:
    """Replace ``path`` with ``data``: temp file, fsync, rename, fsync the directory.

    A crash at any point leaves either the old content or the new one under ``path``.
    The temp file is named ``temp-<name>`` so that startup clean-up recognises it.
    ``renamed`` is called once the new content has the name: a failure after it (the
    directory's fsync) leaves either content possible after a crash.
    """
    directory, name = os.path.split(path)
    tmp = os.path.join(directory, f"temp-{name}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if renamed is not None:
        renamed()
    fsync_dir(directory or ".")


def file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
