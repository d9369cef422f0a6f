"""Damaged data directories against a real server: what it repairs, what it refuses.

A torn tail of the last incremental file is truncated with a log line naming the file and
the offset (``aof-load-truncated yes``) or refused (``no``); damage anywhere else stops the
start with the file, the offset and the repair command; files a crash leaves behind
(half-written temp files, a rename that did not happen) never stop a start.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import HotkvProcess
from hotkv_server.persistence.framing import frame_value, iter_frames
from hotkv_server.persistence.manifest import Layout

CHECK = [sys.executable, "-m", "hotkv_server.persistence.check"]


def server(procs: list[HotkvProcess], data_dir: str, *args: str) -> HotkvProcess:
    proc = HotkvProcess("--appendonly", "yes", "--appendfsync", "always", *args, dir=data_dir)
    procs.append(proc)
    return proc


def write_keys(proc: HotkvProcess, n: int, prefix: str = "k") -> None:
    r = proc.client()
    for i in range(n):
        r.set(f"{prefix}{i}", f"value-{i}")


def last_incr(data_dir: str) -> str:
    layout = Layout(data_dir)
    manifest = layout.read_manifest()
    assert manifest is not None
    return layout.path(manifest.incrs[-1].name)


def record_starts(path: str) -> list[int]:
    data = Path(path).read_bytes()
    return [f.offset for f in iter_frames(data)]


def start_fails(proc: HotkvProcess) -> str:
    with pytest.raises(RuntimeError, match="exited with 1") as info:
        proc.start()
    return str(info.value)


def keys(proc: HotkvProcess) -> list[bytes]:
    return sorted(proc.client().keys("*"))


@pytest.mark.parametrize("into", [1, 15, 16, 30, -1])
def test_a_torn_tail_is_truncated_with_a_log_line(procs: list[HotkvProcess], data_dir: str,
                                                  into: int) -> None:
    proc = server(procs, data_dir)
    proc.start()
    write_keys(proc, 5)
    proc.kill()
    path = last_incr(data_dir)
    starts = record_starts(path)
    size = os.path.getsize(path)
    cut = starts[-1] + (into if into > 0 else size - starts[-1] + into)
    os.truncate(path, cut)
    proc.start()
    assert keys(proc) == [b"k0", b"k1", b"k2", b"k3"]
    log = proc.log()
    assert f"AOF {path} ends inside a record at offset {starts[-1]}" in log
    assert "aof-load-truncated is yes" in log
    assert os.path.getsize(path) == starts[-1]
    proc.client().set("k4", "again")  # appending goes on after the cut
    proc.kill()
    proc.start()
    assert proc.client().get("k4") == b"again"


def test_a_torn_tail_is_refused_with_aof_load_truncated_no(procs: list[HotkvProcess],
                                                           data_dir: str) -> None:
    proc = server(procs, data_dir, "--aof-load-truncated", "no")
    proc.start()
    write_keys(proc, 3)
    proc.kill()
    path = last_incr(data_dir)
    starts = record_starts(path)
    os.truncate(path, starts[-1] + 7)
    message = start_fails(proc)
    assert f"Unexpected end of the append only file {path} at offset {starts[-1]}" in message
    assert f"hotkv-check-aof --fix {data_dir}" in message
    assert os.path.getsize(path) == starts[-1] + 7


def test_a_flipped_byte_stops_the_start_until_repaired(procs: list[HotkvProcess],
                                                       data_dir: str) -> None:
    proc = server(procs, data_dir)
    proc.start()
    write_keys(proc, 10)
    proc.kill()
    path = last_incr(data_dir)
    starts = record_starts(path)
    with open(path, "r+b") as fh:
        fh.seek(starts[4] + 20)
        byte = fh.read(1)[0]
        fh.seek(starts[4] + 20)
        fh.write(bytes([byte ^ 0x10]))
    message = start_fails(proc)
    assert f"Bad file format reading the append only file {path} at offset {starts[4]}" in message
    assert f"hotkv-check-aof --fix {data_dir}" in message
    assert "record checksum mismatch" in message
    # the named repair: truncate at the bad record, then the server starts with the prefix
    done = subprocess.run([*CHECK, "--fix", "--yes", data_dir], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Successfully truncated {os.path.basename(path)} at offset {starts[4]}" in done.stdout
    proc.start()
    assert keys(proc) == [b"k0", b"k1", b"k2", b"k3"]


def _three_incrs(data_dir: str, with_base: bool = True) -> Layout:
    """A directory as a crash in the middle of two rewrites leaves it: base + 3 increments."""
    from hotkv_server.persistence.snapshot import encode_base

    layout = Layout(data_dir)
    os.makedirs(layout.aof_dir)
    lines = []
    if with_base:
        Path(layout.path("appendonly.aof.1.base.hkv")).write_bytes(
            b"".join(encode_base({"kv": [b"base", b"1", None]}, 0)))
        lines.append("file appendonly.aof.1.base.hkv seq 1 type b\n")
    for seq in (2, 3, 4):
        Path(layout.path(f"appendonly.aof.{seq}.incr.aof")).write_bytes(
            frame_value(["kv.set", b"incr%d" % seq, b"v", None]))
        lines.append(f"file appendonly.aof.{seq}.incr.aof seq {seq} type i\n")
    Path(layout.manifest_path).write_text("".join(lines))
    return layout


def test_a_hand_made_directory_loads(procs: list[HotkvProcess], data_dir: str) -> None:
    _three_incrs(data_dir)
    proc = server(procs, data_dir)
    proc.start()
    assert keys(proc) == [b"base", b"incr2", b"incr3", b"incr4"]


@pytest.mark.parametrize(
    ("drop", "expect"),
    [
        ("appendonly.aof.3.incr.aof seq 3", "incremental file seq 3 is missing"),
        ("appendonly.aof.4.incr.aof seq 4", "appendonly.aof.4.incr.aof holds data but"),
        ("appendonly.aof.1.base.hkv seq 1", "appendonly.aof.1.base.hkv holds data but"),
    ],
)
def test_a_missing_manifest_entry_stops_the_start(procs: list[HotkvProcess], data_dir: str,
                                                  drop: str, expect: str) -> None:
    layout = _three_incrs(data_dir)
    text = Path(layout.manifest_path).read_text()
    Path(layout.manifest_path).write_text("".join(
        line for line in text.splitlines(keepends=True) if drop not in line))
    message = start_fails(server(procs, data_dir))
    assert expect in message
    assert f"'hotkv-check-aof {data_dir}' lists the files" in message


def test_a_missing_manifest_or_file_stops_the_start(procs: list[HotkvProcess], data_dir: str) -> None:
    layout = _three_incrs(data_dir)
    os.rename(layout.path("appendonly.aof.3.incr.aof"), layout.path("moved-away"))
    message = start_fails(server(procs, data_dir))
    assert "names appendonly.aof.3.incr.aof, which is not in" in message
    os.rename(layout.path("moved-away"), layout.path("appendonly.aof.3.incr.aof"))
    os.unlink(layout.manifest_path)
    message = start_fails(server(procs, data_dir))
    assert "holds data but no manifest lists it" in message


def test_half_written_temp_files_of_an_interrupted_rewrite_are_removed(
        procs: list[HotkvProcess], data_dir: str) -> None:
    proc = server(procs, data_dir)
    proc.start()
    write_keys(proc, 20)
    proc.client().bgrewriteaof()
    write_keys(proc, 5, "after")
    proc.kill()
    layout = Layout(data_dir)
    from hotkv_server.persistence.snapshot import encode_base

    half = b"".join(encode_base({"kv": [b"x", b"y", None] * 1000}, 0))
    Path(layout.path("temp-appendonly.aof.7.base.hkv")).write_bytes(half[: len(half) // 2])
    Path(layout.path("temp-appendonly.aof.9.incr.aof")).write_bytes(b"\x00garbage")
    Path(layout.path("temp-appendonly.aof.manifest")).write_text("file x seq")
    Path(layout.path("appendonly.aof.99.incr.aof")).write_bytes(b"")  # created, never listed
    proc.start()
    assert len(keys(proc)) == 25
    assert not [n for n in os.listdir(layout.aof_dir) if n.startswith("temp-") or ".99." in n]
    log = proc.log()
    assert "temp-appendonly.aof.7.base.hkv, left by an interrupted rewrite" in log


def test_a_rename_interrupted_after_the_manifest_is_completed(procs: list[HotkvProcess],
                                                              data_dir: str) -> None:
    layout = _three_incrs(data_dir)
    os.rename(layout.path("appendonly.aof.1.base.hkv"), layout.path("temp-appendonly.aof.1.base.hkv"))
    os.rename(layout.path("appendonly.aof.4.incr.aof"), layout.path("temp-appendonly.aof.4.incr.aof"))
    proc = server(procs, data_dir)
    proc.start()
    assert keys(proc) == [b"base", b"incr2", b"incr3", b"incr4"]
    assert "Completed an interrupted rewrite" in proc.log()


def test_history_entries_are_deleted_at_start(procs: list[HotkvProcess], data_dir: str) -> None:
    layout = _three_incrs(data_dir)
    Path(layout.path("appendonly.aof.1.incr.aof")).write_bytes(frame_value(["kv.set", b"old", b"v", None]))
    with open(layout.manifest_path, "a") as fh:
        fh.write("file appendonly.aof.1.incr.aof seq 1 type h\n")
        fh.write("file appendonly.aof.0.base.hkv seq 0 type h\n")  # already deleted
    proc = server(procs, data_dir)
    proc.start()
    assert keys(proc) == [b"base", b"incr2", b"incr3", b"incr4"]
    assert not os.path.exists(layout.path("appendonly.aof.1.incr.aof"))
    assert "type h" not in Path(layout.manifest_path).read_text()


def test_loading_is_answered_while_a_large_aof_loads(procs: list[HotkvProcess], data_dir: str) -> None:
    """Clients connected during the load get -LOADING for data commands, INFO says loading:1."""
    import socket
    import threading
    import time

    from helpers import free_port

    layout = Layout(data_dir)
    os.makedirs(layout.aof_dir)
    with open(layout.path("appendonly.aof.1.incr.aof"), "wb") as fh:
        chunk = b"".join(frame_value(["kv.set", b"key%d" % i, b"v", None]) for i in range(10_000))
        for _ in range(40):  # 400k records: loading takes a while
            fh.write(chunk)
    Path(layout.manifest_path).write_text("file appendonly.aof.1.incr.aof seq 1 type i\n")
    port = free_port()
    proc = HotkvProcess("--appendonly", "yes", dir=data_dir, port=port)
    procs.append(proc)
    seen: dict[str, bytes] = {}

    def probe() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            except OSError:
                time.sleep(0.002)
                continue
            with sock:
                sock.sendall(b"GET key1\r\nINFO persistence\r\n")
                data = b""
                while data.count(b"\r\n") < 3 or (data.startswith(b"-") and b"loading_loaded_perc" not in data):
                    more = sock.recv(65536)
                    if not more:
                        break
                    data += more
                seen["replies"] = data
            return

    t = threading.Thread(target=probe)
    t.start()
    proc.start(timeout=60)
    t.join()
    replies = seen.get("replies", b"")
    assert replies.startswith(b"-LOADING hotkv is loading the dataset in memory\r\n"), replies[:200]
    assert b"loading:1" in replies and b"loading_loaded_perc:" in replies
    assert proc.client().dbsize() == 10_000


def test_a_damaged_base_is_refused_with_one_true_remedy(procs: list[HotkvProcess],
                                                        data_dir: str) -> None:
    """Truncation (hotkv-check-aof --fix) cannot repair a base, so the message does not
    send the user there: it says the one thing that helps."""
    layout = _three_incrs(data_dir)
    base = layout.path("appendonly.aof.1.base.hkv")
    with open(base, "r+b") as fh:
        data = bytearray(fh.read())
        data[len(data) // 2] ^= 0x40
        fh.seek(0)
        fh.write(data)
    message = start_fails(server(procs, data_dir))
    line = next(x for x in message.splitlines() if "Bad base file" in x)
    assert f"Bad base file {base}" in line
    assert line.endswith(f"a damaged base cannot be repaired: restore {base} from a backup")
    assert "--fix" not in line and "check-aof" not in line
