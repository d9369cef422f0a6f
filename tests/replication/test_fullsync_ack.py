"""In process: a replica's early ACK must not let the stream reach it twice.

A replica acknowledges as soon as it has read and loaded the snapshot's bytes, which can be
before the primary has read the end of its snapshot child's pipe. Writes fed meanwhile are
held, to follow the snapshot. A regression: the ACK marked the replica ``online`` at once,
so the next flush also wrote those writes directly (before the held copy, even before the
snapshot), and the replica applied them twice and counted their bytes twice; a restarted
primary then refused its partial resync (the replica's offset was ahead of its own).

The server is a real ``Server``; the replica and the writer are ``ClientProtocol`` objects
whose transports record what they are sent. Everything happens between two turns of the
event loop, before the child's pipe is read, so the order is not left to chance.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from hotkv_server.server.connection import ClientProtocol
from persistence.recording import RecordingTransport
from server.fakes import running_server


def command(*words: bytes) -> bytes:
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%b\r\n" % (len(w), w) for w in words)


def test_an_ack_during_the_snapshot_does_not_duplicate_the_stream(tmp_path: Path) -> None:
    log: list[tuple[str, bytes, int]] = []

    async def run() -> list[str]:
        async with running_server("--dir", str(tmp_path), "--save", "") as server:
            core = server.core
            replica = ClientProtocol(core)
            replica.connection_made(RecordingTransport("replica", log, lambda: None))  # type: ignore[arg-type]
            writer = ClientProtocol(core)
            writer.connection_made(RecordingTransport("writer", log, lambda: None))  # type: ignore[arg-type]
            replica.data_received(command(b"REPLCONF", b"listening-port", b"7000")
                                  + command(b"REPLCONF", b"capa", b"psync2"))
            replica.data_received(command(b"PSYNC", b"?", b"-1"))
            repl = core.replication
            assert repl.replicas.fullsync.job is not None  # the child is forked, its pipe unread
            replica.data_received(command(b"REPLCONF", b"ACK", b"0"))  # early, as a fast replica's
            states = [p.state for p in repl.replicas.peers.values()]
            writer.data_received(command(b"SET", b"during", b"the snapshot"))
            for _ in range(1000):  # the snapshot comes from a forked child: wait until it is sent
                await asyncio.sleep(0.01)
                if repl.replicas.fullsync.job is None:
                    break
            assert repl.replicas.fullsync.job is None
            writer.data_received(command(b"SET", b"after", b"the snapshot"))
            for _ in range(3):
                await asyncio.sleep(0)
            replica.data_received(command(b"REPLCONF", b"ACK", b"%d" % repl.history.offset))
            states += [p.state for p in repl.replicas.peers.values()]
        return states

    states = asyncio.run(run())
    assert states == ["wait_bgsave", "online"]  # online only after the whole snapshot
    stream = b"".join(data for name, data, _ in log if name == "replica")
    head, _, rest = stream.partition(b"+FULLRESYNC ")
    assert b"HOTKV.EFFECT" not in head
    _fullresync_args, _, rest = rest.partition(b"\r\n")
    rest = rest.lstrip(b"\n")  # keep-alive newlines while the child works
    assert rest.startswith(b"$"), rest[:40]
    size_line, _, rest = rest.partition(b"\r\n")
    snapshot, stream_after = rest[:int(size_line[1:])], rest[int(size_line[1:]):]
    assert b"during" not in snapshot  # written after the fork: it belongs to the stream
    assert stream_after.count(b"HOTKV.EFFECT") == 2, stream_after
    assert stream_after.count(b"during") == 1 and stream_after.count(b"after") == 1
    assert stream_after.index(b"during") < stream_after.index(b"after")
