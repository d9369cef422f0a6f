"""hotkv-check-aof: reports per file, asks before repairing, keeps the repaired data a prefix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hotkv_server.persistence.framing import frame_value, iter_frames
from hotkv_server.persistence.manifest import Layout
from hotkv_server.persistence.snapshot import encode_base

SCRIPT = Path(sys.executable).with_name("hotkv-check-aof")


def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    cmd = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "hotkv_server.persistence.check"]
    return subprocess.run([*cmd, *args], input=stdin, capture_output=True, text=True, timeout=30)


def make(data_dir: str, incrs: int = 2, per_file: int = 3) -> Layout:
    layout = Layout(data_dir)
    os.makedirs(layout.aof_dir)
    Path(layout.path("appendonly.aof.1.base.hkv")).write_bytes(
        b"".join(encode_base({"kv": [b"base", b"1", None]}, 0)))
    lines = ["file appendonly.aof.1.base.hkv seq 1 type b\n"]
    for seq in range(1, incrs + 1):
        Path(layout.path(f"appendonly.aof.{seq}.incr.aof")).write_bytes(b"".join(
            frame_value(["kv.set", b"k%d.%d" % (seq, i), b"v", None]) for i in range(per_file)))
        lines.append(f"file appendonly.aof.{seq}.incr.aof seq {seq} type i\n")
    Path(layout.manifest_path).write_text("".join(lines))
    return layout


def starts(path: str) -> list[int]:
    return [f.offset for f in iter_frames(Path(path).read_bytes())]


def test_a_valid_directory(tmp_path: Path) -> None:
    layout = make(str(tmp_path))
    with open(layout.path("appendonly.aof.1.incr.aof"), "ab") as fh:  # one turn's writes
        fh.write(frame_value(["tx", [["kv.set", b"t1", b"v", None], ["kv.del", [b"t1"]]]]))
    done = run(str(tmp_path))
    assert done.returncode == 0, done.stdout
    assert "appendonly.aof.1.base.hkv: base, 3 frames" in done.stdout
    assert "appendonly.aof.1.incr.aof: incr, 5 records" in done.stdout  # the tx counts 2
    assert "appendonly.aof.2.incr.aof: incr, 3 records" in done.stdout
    assert done.stdout.rstrip().endswith("The AOF is valid")
    # the appendonlydir itself may be named too
    assert run(str(tmp_path / "appendonlydir")).returncode == 0


def test_a_torn_tail_is_reported_then_fixed_after_asking(tmp_path: Path) -> None:
    layout = make(str(tmp_path))
    path = layout.path("appendonly.aof.2.incr.aof")
    last = starts(path)[-1]
    os.truncate(path, last + 5)
    done = run(str(tmp_path))
    assert done.returncode == 1
    assert f"appendonly.aof.2.incr.aof: incr, truncated (ends inside a record) at offset {last}" in done.stdout
    assert "Run with --fix to truncate appendonly.aof.2.incr.aof" in done.stdout
    no = run("--fix", str(tmp_path), stdin="n\n")
    assert no.returncode == 1 and "Nothing changed" in no.stdout
    assert os.path.getsize(path) == last + 5
    yes = run("--fix", str(tmp_path), stdin="y\n")
    assert yes.returncode == 0, yes.stdout
    assert "Continue? [y/N]" in yes.stdout
    assert os.path.getsize(path) == last
    assert run(str(tmp_path)).returncode == 0


def test_damage_in_an_earlier_file_drops_the_files_after_it(tmp_path: Path) -> None:
    layout = make(str(tmp_path), incrs=3)
    path = layout.path("appendonly.aof.2.incr.aof")
    second = starts(path)[1]
    data = bytearray(Path(path).read_bytes())
    data[second + 18] ^= 0xFF
    Path(path).write_bytes(bytes(data))
    done = run("--fix", "--yes", str(tmp_path))
    assert done.returncode == 0, done.stdout
    assert f"appendonly.aof.2.incr.aof: incr, damaged at offset {second}: record checksum mismatch" in done.stdout
    assert "Moved appendonly.aof.3.incr.aof to appendonly.aof.3.incr.aof.dropped" in done.stdout
    assert os.path.getsize(path) == second
    assert os.path.exists(layout.path("appendonly.aof.3.incr.aof.dropped"))
    manifest = layout.read_manifest()
    assert manifest is not None and [e.name for e in manifest.incrs] == [
        "appendonly.aof.1.incr.aof", "appendonly.aof.2.incr.aof"]
    assert run(str(tmp_path)).returncode == 0


def test_a_damaged_base_cannot_be_fixed(tmp_path: Path) -> None:
    layout = make(str(tmp_path))
    path = layout.path("appendonly.aof.1.base.hkv")
    os.truncate(path, os.path.getsize(path) - 3)
    done = run("--fix", "--yes", str(tmp_path))
    assert done.returncode == 1
    assert "is a damaged base: it cannot be repaired by truncation" in done.stdout


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("manifest-gone", "but data files exist"),
        ("manifest-bad", "incremental file seq 2 is missing"),
        ("file-gone", "appendonly.aof.2.incr.aof: listed in the manifest but missing"),
    ],
)
def test_manifest_problems_are_reported(tmp_path: Path, damage: str, message: str) -> None:
    layout = make(str(tmp_path), incrs=3)
    if damage == "manifest-gone":
        os.unlink(layout.manifest_path)
    elif damage == "manifest-bad":
        text = Path(layout.manifest_path).read_text().replace(
            "file appendonly.aof.2.incr.aof seq 2 type i\n", "")
        Path(layout.manifest_path).write_text(text)
    else:
        os.unlink(layout.path("appendonly.aof.2.incr.aof"))
    done = run("--fix", "--yes", str(tmp_path))
    assert done.returncode == 1
    assert message in done.stdout


def test_an_empty_directory_and_bad_usage(tmp_path: Path) -> None:
    done = run(str(tmp_path))
    assert done.returncode == 0 and "nothing to check" in done.stdout
    assert run(str(tmp_path / "missing")).returncode == 2
    assert run().returncode == 2
