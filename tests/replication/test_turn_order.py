"""In process: a primary's writes reach its replicas only after they are in its AOF.

Redis writes the AOF in beforeSleep before any client output, replicas' included; hotkv
does the same at the end of the event-loop turn (``server/connection.end_turn``). The
server is a real ``Server`` with its persistence and replication subsystems; the clients
and the replica are ``ClientProtocol`` objects whose transport records, for every write,
how big the AOF file was at that moment.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from hotkv_server.server.connection import ClientProtocol
from persistence.recording import RecordingTransport
from server.fakes import running_server


def command(*words: bytes) -> bytes:
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%b\r\n" % (len(w), w) for w in words)


def test_replicas_get_a_turns_writes_after_the_aof_has_them(tmp_path: Path) -> None:
    log: list[tuple[str, bytes, int]] = []
    aof: list[str] = []

    async def run() -> tuple[int, int]:
        async with running_server("--dir", str(tmp_path), "--save", "", "--appendonly", "yes",
                                  "--appendfsync", "everysec") as server:
            core = server.core
            persistence = core.persistence
            aof.append(persistence.aof.path)

            replica = ClientProtocol(core)
            replica.connection_made(RecordingTransport("replica", log, lambda: aof[0] if aof else None))  # type: ignore[arg-type]
            replica.data_received(command(b"REPLCONF", b"listening-port", b"7000"))
            replica.data_received(command(b"PSYNC", b"?", b"-1"))
            repl = core.replication
            for _ in range(1000):  # the snapshot comes from a forked child: wait until it is sent
                await asyncio.sleep(0.01)
                if repl.replicas.fullsync.job is None:
                    break
            assert any(data.startswith(b"+FULLRESYNC") for name, data, _ in log if name == "replica")
            log.clear()

            writer = ClientProtocol(core)
            writer.connection_made(RecordingTransport("writer", log, lambda: aof[0] if aof else None))  # type: ignore[arg-type]
            before = os.path.getsize(aof[0])
            writer.data_received(command(b"SET", b"k", b"v") + command(b"AMEM.WORK.SET", b"s", b"k", b"v"))
            assert log == []  # nothing leaves during the turn
            for _ in range(3):
                await asyncio.sleep(0)
        return before, os.path.getsize(aof[0])

    before, after = asyncio.run(run())
    assert {name for name, _, _ in log} == {"writer", "replica"}
    stream = b"".join(data for name, data, _ in log if name == "replica")
    assert stream.count(b"HOTKV.EFFECT") == 2
    sizes = {size for _, _, size in log}
    assert after > before and sizes == {after}  # every write out came after the AOF write
