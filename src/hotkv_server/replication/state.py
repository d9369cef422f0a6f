"""The replication id and offset that go with the data on disk (``<dir>/replication.state``).

Redis keeps them in its RDB's aux fields, so a restarted replica can ask its primary for a
partial resync (and a restarted primary can grant one). Here the data lives in the
persistence subsystem's files; this small JSON file, written on a clean shutdown *only
when those files will hold exactly the data of that moment* (AOF on, or a final save),
says which history and offset that data is at::

    {"replid": "<40 hex>", "offset": 12345}

It is read once at start and deleted at once: after a restart the data files move on with
new writes, so an old offset would be a lie after a later crash. A missing or unreadable
file simply means "unknown": the next sync is a full one.
"""

from __future__ import annotations

import json
import logging
import os
import re

log = logging.getLogger("hotkv")

FILENAME = "replication.state"
_REPLID = re.compile(r"^[0-9a-f]{40}$")


def path_in(directory: str) -> str:
    return os.path.join(directory, FILENAME)


def take(directory: str) -> tuple[str, int] | None:
    """Read and remove the saved ``(replid, offset)``, if a valid one is there."""
    path = path_in(directory)
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("Can't read %s: %s (a full sync will follow)", path, exc)
        return None
    discard(directory)
    try:
        data = json.loads(text)
        replid = data["replid"]
        offset = data["offset"]
    except (ValueError, KeyError, TypeError):
        log.warning("Ignoring %s: not a replication state file", path)
        return None
    if not isinstance(replid, str) or not _REPLID.match(replid) or type(offset) is not int or offset < 0:
        log.warning("Ignoring %s: bad replication id or offset", path)
        return None
    return replid, offset


def save(directory: str, replid: str, offset: int) -> None:
    """Write the file atomically (temp file, fsync, rename)."""
    path = path_in(directory)
    temp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(temp, "w", encoding="utf-8") as fh:
            json.dump({"replid": replid, "offset": offset}, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temp, path)
    except OSError as exc:
        log.warning("Can't write %s: %s (the next sync after a restart will be a full one)", path, exc)
        try:
            os.unlink(temp)
        except OSError:
            pass


def discard(directory: str) -> None:
    try:
        os.unlink(path_in(directory))
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("Can't remove %s: %s", path_in(directory), exc)
