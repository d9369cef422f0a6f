"""The file formats in-process: frames, manifest, base snapshots, and loading a directory.

These drive the same Loader the server runs, on a real Database, so that every byte
offset of a torn record and every flipped byte can be tried quickly.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from hotkv_server.persistence import snapshot
from hotkv_server.persistence.framing import (
    HEADER_SIZE,
    FrameError,
    frame_value,
    iter_frames,
    scan_file,
)
from hotkv_server.persistence.loader import Loader, LoadError, read_checked_manifest
from hotkv_server.persistence.manifest import Entry, Layout, Manifest, ManifestError
from hotkv_server.persistence.snapshot import BaseFormatError, decode_base, encode_base
from hotkv_server.stores.database import Database, default_database

NOW = 1_700_000_000_000


# --- frames ----------------------------------------------------------------------------------


def test_frames_round_trip_keeping_bytes_and_str_apart() -> None:
    values: list[Any] = [
        ["kv.set", b"key", b"\x00\xff", None],
        ["tx", [["kv.set", b"a", b"1", NOW + 5], ["kv.del", b"b"]]],
        {"str": 1, b"bytes": [1.5, True, None]},
        ["big", b"x" * 100_000],
    ]
    data = b"".join(frame_value(v) for v in values)
    got = [f.value for f in iter_frames(data)]
    assert got == values
    assert isinstance(got[0][0], str) and isinstance(got[0][1], bytes)


def _three_records() -> tuple[bytes, list[int]]:
    pieces = [frame_value(["kv.set", b"k%d" % i, b"v" * (i + 3), None]) for i in range(3)]
    starts = [sum(len(p) for p in pieces[:i]) for i in range(3)]
    return b"".join(pieces), starts


def test_a_file_cut_anywhere_inside_a_record_is_torn_at_its_start() -> None:
    data, starts = _three_records()
    for cut in range(len(data) + 1):
        got = []
        try:
            for f in iter_frames(data[:cut]):
                got.append(f.value)
        except FrameError as exc:
            assert exc.torn, cut
            assert exc.offset == max(s for s in starts if s <= cut)
            assert exc.offset == sum(len(frame_value(v)) for v in got)
        else:
            assert cut in (*starts, len(data))


def test_any_flipped_byte_is_damage_not_a_torn_tail() -> None:
    data, starts = _three_records()
    for pos in range(len(data)):
        damaged = bytearray(data)
        damaged[pos] ^= 0x40
        with pytest.raises(FrameError) as info:
            list(iter_frames(bytes(damaged)))
        assert not info.value.torn, pos
        assert info.value.offset == max(s for s in starts if s <= pos)


def test_a_damaged_length_near_the_end_is_not_mistaken_for_a_crash() -> None:
    data, starts = _three_records()
    damaged = bytearray(data)
    damaged[starts[2] + 3] = 0x7F  # a huge length in the last record's header
    with pytest.raises(FrameError) as info:
        list(iter_frames(bytes(damaged)))
    assert not info.value.torn and info.value.reason == "record header checksum mismatch"


# --- manifest --------------------------------------------------------------------------------


def test_manifest_round_trip_and_history(tmp_path: Any) -> None:
    layout = Layout(str(tmp_path))
    m = Manifest(Entry("appendonly.aof.3.base.hkv", 3, "b"),
                 [Entry("appendonly.aof.5.incr.aof", 5, "i"), Entry("appendonly.aof.6.incr.aof", 6, "i")],
                 [Entry("appendonly.aof.2.base.hkv", 2, "b")])
    assert layout.parse_manifest(m.render()) == m
    text = m.render().decode()
    assert "file appendonly.aof.3.base.hkv seq 3 type b\n" in text
    assert "file appendonly.aof.2.base.hkv seq 2 type h\n" in text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("file appendonly.aof.5.incr.aof seq 5 type i\nfile appendonly.aof.7.incr.aof seq 7 type i\n",
         "incremental file seq 6 is missing"),
        ("file appendonly.aof.5.incr.aof seq 5 type i\nfile appendonly.aof.3.base.hkv seq 3 type b\n",
         "the base must be the one first entry"),
        ("file appendonly.aof.5.incr.aof seq 6 type i\n", "does not match seq 6"),
        ("file ../etc/passwd seq 1 type b\n", "does not match"),
        ("file appendonly.aof.5.incr.aof seq five type i\n", "expected 'file <name> seq <n>"),
        ("garbage\n", "expected 'file <name> seq <n>"),
    ],
)
def test_bad_manifests_are_refused(tmp_path: Any, text: str, message: str) -> None:
    layout = Layout(str(tmp_path))
    with pytest.raises(ManifestError, match=message):
        layout.parse_manifest(text.encode())


def test_appendfilename_must_be_a_plain_name(tmp_path: Any) -> None:
    with pytest.raises(ManifestError):
        Layout(str(tmp_path), "../x.aof")


# --- base snapshots ----------------------------------------------------------------------------


def _base_bytes(state: dict[str, Any]) -> bytes:
    return b"".join(encode_base(state, NOW))


def test_base_round_trip_with_chunks_and_dict_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot, "CHUNK_BYTES", 64)  # many chunks from a small list
    state = {
        "kv": [b"k%d" % i for i in range(200)],
        "empty": [],
        "sem": {b"ns1": {"index": b"\x01" * 1000}, b"ns2": {"index": None}},
        "nodict": {},
        "scalar": 42,
    }
    data = _base_bytes(state)
    got: dict[str, Any] = {}
    offsets = list(decode_base(data, got))
    assert got == state
    assert offsets[-1] == len(data) and len(offsets) > 10


@pytest.mark.parametrize("cut", [0, 1, HEADER_SIZE + 3, -1, -HEADER_SIZE - 1])
def test_a_cut_base_is_refused(cut: int) -> None:
    data = _base_bytes({"kv": [b"a", b"b"], "sem": {b"x": 1}})
    with pytest.raises(BaseFormatError):
        list(decode_base(data[:cut], {}))


def test_a_base_without_its_trailer_or_with_a_wrong_header_is_refused() -> None:
    pieces = list(encode_base({"kv": [b"a"]}, NOW))
    with pytest.raises(BaseFormatError, match="without its trailer"):
        list(decode_base(b"".join(pieces[:-1]), {}))
    with pytest.raises(BaseFormatError, match="not a hotkv base"):
        list(decode_base(frame_value(["something", 1, 2, 3]), {}))


# --- loading a directory ---------------------------------------------------------------------


class Dir:
    """A data directory written by hand, file by file."""

    def __init__(self, path: str) -> None:
        self.layout = Layout(path)
        os.makedirs(self.layout.aof_dir, exist_ok=True)
        self.manifest = Manifest()

    def base(self, seq: int, db: Database) -> str:
        name = self.layout.base_name(seq)
        with open(self.layout.path(name), "wb") as out:
            snapshot.write_base(out, db.snapshot(), NOW)
        self.manifest.base = Entry(name, seq, "b")
        return self.layout.path(name)

    def incr(self, seq: int, effects: list[Any]) -> str:
        name = self.layout.incr_name(seq)
        with open(self.layout.path(name), "wb") as out:
            for effect in effects:
                out.write(frame_value(effect))
        self.manifest.incrs.append(Entry(name, seq, "i"))
        return self.layout.path(name)

    def commit(self) -> None:
        self.layout.write_manifest(self.manifest)

    def load(self, *, truncate: bool = True, now: int = NOW) -> tuple[Database, Any]:
        db = default_database()
        loader = Loader(self.layout, read_checked_manifest(self.layout), db,
                        truncate_torn_tail=truncate, now_ms=lambda: now)
        return db, loader.load_all()


def _sets(n: int, prefix: bytes = b"k") -> list[Any]:
    return [["kv.set", prefix + b"%d" % i, b"v%d" % i, None] for i in range(n)]


def test_base_then_increments_replay_in_order(tmp_path: Any) -> None:
    d = Dir(str(tmp_path))
    db = default_database()
    for effect in _sets(5, b"base"):
        db.apply(effect)
    d.base(1, db)
    d.incr(1, [["kv.set", b"x", b"1", None], ["kv.del", [b"base0"]]])
    d.incr(2, [["tx", [["kv.set", b"x", b"2", None], ["kv.set", b"y", b"3", None]]], ["flushall"],
               ["kv.set", b"z", b"4", None]])
    d.commit()
    loaded, stats = d.load()
    assert sorted(loaded.kv.ids(NOW)) == [b"z"]
    assert stats.records == 6 and stats.truncated is None  # the tx counts its two effects
    d.manifest.incrs.pop()
    d.commit()
    loaded, _ = d.load()
    assert sorted(loaded.kv.ids(NOW)) == [b"base1", b"base2", b"base3", b"base4", b"x"]


def test_replay_never_purges_midway_and_drops_what_expired_at_the_end(tmp_path: Any) -> None:
    d = Dir(str(tmp_path))
    d.incr(1, [
        ["kv.set", b"gone", b"v", NOW - 10],
        ["kv.set", b"renewed", b"v", NOW - 10],
        ["kv.set", b"renewed", b"w", None],  # written again before it was purged: lives
        ["kv.set", b"later", b"v", NOW + 60_000],
    ])
    d.commit()
    db, stats = d.load()
    assert sorted(db.kv.ids(NOW)) == [b"later", b"renewed"]
    assert stats.purged == 1
    assert db.kv.snapshot()[db.kv.snapshot().index(b"later") + 2] == NOW + 60_000


def test_a_torn_last_record_is_truncated_at_every_offset(tmp_path: Any) -> None:
    effects = _sets(4)
    last_frame = frame_value(effects[-1])
    for cut in range(1, len(last_frame)):
        d = Dir(str(tmp_path / f"cut{cut}"))
        d.incr(1, _sets(2, b"a"))
        path = d.incr(2, effects)
        d.commit()
        full = os.path.getsize(path)
        good = full - len(last_frame)
        os.truncate(path, good + cut)
        with pytest.raises(LoadError) as info:
            d.load(truncate=False)
        message = str(info.value)
        assert path in message and f"offset {good}" in message
        assert "hotkv-check-aof --fix" in message and "aof-load-truncated" in message
        assert os.path.getsize(path) == good + cut  # refused: nothing changed
        db, stats = d.load(truncate=True)
        assert sorted(db.kv.ids(NOW)) == [b"a0", b"a1", b"k0", b"k1", b"k2"]
        assert stats.truncated == (path, good)
        assert os.path.getsize(path) == good


def test_a_torn_record_in_an_earlier_file_stops_the_load(tmp_path: Any) -> None:
    d = Dir(str(tmp_path))
    first = d.incr(1, _sets(3))
    d.incr(2, _sets(1, b"b"))
    d.commit()
    os.truncate(first, os.path.getsize(first) - 2)
    with pytest.raises(LoadError, match="Bad file format") as info:
        d.load()
    assert first in str(info.value) and "hotkv-check-aof --fix" in str(info.value)


def test_a_flipped_byte_stops_the_load_with_file_and_offset(tmp_path: Any) -> None:
    d = Dir(str(tmp_path))
    path = d.incr(1, _sets(10))
    d.commit()
    size = len(frame_value(_sets(10)[0]))
    with open(path, "r+b") as fh:
        fh.seek(5 * size + 20)
        byte = fh.read(1)
        fh.seek(5 * size + 20)
        fh.write(bytes([byte[0] ^ 1]))
    with pytest.raises(LoadError) as info:
        d.load()
    assert f"{path} at offset {5 * size}" in str(info.value)
    assert "record checksum mismatch" in str(info.value)
    assert f"hotkv-check-aof --fix {d.layout.data_dir}" in str(info.value)


def test_an_effect_that_does_not_apply_stops_the_load(tmp_path: Any) -> None:
    d = Dir(str(tmp_path))
    path = d.incr(1, [["kv.set", b"a", b"1", None], ["nostore.verb", 1], ["kv.set", b"b", b"2", None]])
    d.commit()
    with pytest.raises(LoadError, match="Bad effect") as info:
        d.load()
    assert path in str(info.value)


def test_a_damaged_base_stops_the_load(tmp_path: Any) -> None:
    d = Dir(str(tmp_path))
    db = default_database()
    for effect in _sets(3):
        db.apply(effect)
    path = d.base(1, db)
    d.commit()
    os.truncate(path, os.path.getsize(path) - 1)
    with pytest.raises(LoadError, match="Bad base file") as info:
        d.load()
    assert path in str(info.value)


def test_the_loader_yields_while_it_works(tmp_path: Any) -> None:
    d = Dir(str(tmp_path))
    d.incr(1, _sets(5000))
    d.commit()
    db = default_database()
    loader = Loader(d.layout, read_checked_manifest(d.layout), db, truncate_torn_tail=True,
                    now_ms=lambda: NOW)
    steps = sum(1 for _ in loader.run())
    assert steps >= 1 and loader.stats.records == 5000
    assert loader.stats.loaded_bytes == loader.stats.total_bytes == os.path.getsize(
        d.layout.path("appendonly.aof.1.incr.aof"))


def test_scan_file_reports_good_prefix(tmp_path: Any) -> None:
    path = str(tmp_path / "f")
    with open(path, "wb") as fh:
        fh.write(b"".join(frame_value(e) for e in _sets(3)) + b"\x01\x02")
    count, good, error = scan_file(path)
    assert count == 3 and good == os.path.getsize(path) - 2
    assert error is not None and error.torn
