"""``hotkv-check-aof [--fix] [--yes] DIR``: report on a data directory and repair its AOF.

It reads the manifest, checks every base and incremental file frame by frame (lengths,
checksums, msgpack, effect shape) and says where the first damage is. With ``--fix`` it
truncates the damaged incremental file at its first bad record, after asking (or at once
with ``--yes``). Incremental files after a damaged one are taken out of the manifest and
kept beside it as ``<name>.dropped``: replaying them after a hole could apply effects to
objects whose creation was lost, so the repaired data is always a prefix of the history.
A damaged base cannot be repaired by truncation: restore it from a backup.

Exit status: 0 the data loads (as found or after the repair), 1 it does not, 2 bad usage.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

from hotkv_server.persistence.framing import FrameError, MappedFile, effect_count, iter_frames
from hotkv_server.persistence.manifest import AOF_DIRNAME, Entry, Layout, Manifest, ManifestError
from hotkv_server.persistence.snapshot import BaseFormatError, decode_base


@dataclass
class FileReport:
    entry: Entry
    size: int
    records: int
    good: int  # bytes of good records from the start
    error: str | None = None
    torn: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


def find_layout(path: str, appendfilename: str | None) -> Layout:
    """The layout of ``path``: a server ``dir`` or the ``appendonlydir`` inside one."""
    path = os.path.abspath(path)
    if os.path.basename(path) == AOF_DIRNAME and not os.path.isdir(os.path.join(path, AOF_DIRNAME)):
        data_dir = os.path.dirname(path)
    else:
        data_dir = path
    aof_dir = os.path.join(data_dir, AOF_DIRNAME)
    if appendfilename is None:
        manifests = sorted(n for n in _listdir(aof_dir) if n.endswith(".manifest") and not n.startswith("temp-"))
        appendfilename = manifests[0][: -len(".manifest")] if len(manifests) == 1 else "appendonly.aof"
    return Layout(data_dir, appendfilename)


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def check_base(layout: Layout, entry: Entry) -> FileReport:
    path = layout.path(entry.name)
    size = os.path.getsize(path)
    state: dict[str, object] = {}
    frames = 0
    try:
        with MappedFile(path) as mapped:
            for _ in decode_base(mapped.data, state):
                frames += 1
    except BaseFormatError as exc:
        return FileReport(entry, size, frames, exc.offset, exc.reason)
    return FileReport(entry, size, frames, size)


def check_incr(layout: Layout, entry: Entry) -> FileReport:
    path = layout.path(entry.name)
    size = os.path.getsize(path)
    records = 0
    good = 0
    with MappedFile(path) as mapped:
        try:
            for fr in iter_frames(mapped.data):
                count = effect_count(fr.value)
                if count is None:
                    return FileReport(entry, size, records, good, "record is not an effect")
                records += count
                good = fr.end
        except FrameError as exc:
            return FileReport(entry, size, records, good, exc.reason, torn=exc.torn)
    return FileReport(entry, size, records, good)


def run(layout: Layout, *, fix: bool, confirm: Callable[[str], bool], out: Callable[[str], None]) -> int:
    out(f"Checking {layout.aof_dir}")
    try:
        manifest = layout.read_manifest()
    except ManifestError as exc:
        out(f"Manifest: {exc}")
        out("The manifest cannot be repaired automatically: restore it from a backup.")
        return 1
    if manifest is None:
        stray = [e.name for e in layout.data_files()]
        if stray:
            out(f"No manifest at {layout.manifest_path}, but data files exist: {', '.join(stray)}")
            return 1
        out(f"No manifest at {layout.manifest_path}: nothing to check (the server starts empty)")
        return 0
    for name in layout.temp_files():
        out(f"{name}: temp file (an unfinished rewrite or save; the next start removes or completes it)")
    listed = {e.name for e in manifest.entries()} | {e.name for e in manifest.history}
    status = 0
    for entry in layout.data_files():
        if entry.name not in listed and os.path.getsize(layout.path(entry.name)):
            out(f"{entry.name}: holds data but the manifest does not list it (the server refuses to start)")
            status = 1
    reports: list[FileReport] = []
    for entry in manifest.entries():
        path = layout.path(entry.name)
        if not os.path.exists(path):
            temp = layout.temp_name(entry.name)
            if os.path.exists(layout.path(temp)):
                out(f"{entry.name}: not there yet, {temp} is (the next start renames it)")
                continue
            out(f"{entry.name}: listed in the manifest but missing")
            return 1
        report = check_base(layout, entry) if entry.kind == "b" else check_incr(layout, entry)
        reports.append(report)
        kind = "base" if entry.kind == "b" else "incr"
        unit = "frames" if entry.kind == "b" else "records"
        if report.ok:
            out(f"{entry.name}: {kind}, {report.records} {unit}, {report.size} bytes: OK")
        else:
            what = "truncated (ends inside a record)" if report.torn else "damaged"
            out(f"{entry.name}: {kind}, {what} at offset {report.good}: {report.error}; "
                f"{report.records} good {unit} before it, {report.size - report.good} bytes from there")
    bad = next((r for r in reports if not r.ok), None)
    if bad is None:
        if status == 0:
            out("The AOF is valid")
        return status
    if bad.entry.kind == "b":
        out(f"{bad.entry.name} is a damaged base: it cannot be repaired by truncation; restore it from a backup")
        return 1
    later = [r.entry for r in reports if r.entry.kind == "i" and r.entry.seq > bad.entry.seq]
    plan = f"truncate {bad.entry.name} to {bad.good} bytes (losing {bad.size - bad.good} bytes)"
    if later:
        plan += (f", and take {', '.join(e.name for e in later)} out of the manifest "
                 "(kept as <name>.dropped)")
    if not fix:
        out(f"Run with --fix to {plan}")
        return 1
    if not confirm(f"This will {plan}. Continue? [y/N]: "):
        out("Nothing changed")
        return 1
    repair(layout, manifest, bad, later)
    out(f"Successfully truncated {bad.entry.name} at offset {bad.good}")
    for entry in later:
        out(f"Moved {entry.name} to {entry.name}.dropped")
    return status


def repair(layout: Layout, manifest: Manifest, bad: FileReport, later: list[Entry]) -> None:
    path = layout.path(bad.entry.name)
    with open(path, "r+b") as fh:
        fh.truncate(bad.good)
        fh.flush()
        os.fsync(fh.fileno())
    if later:
        dropped = {e.name for e in later}
        layout.write_manifest(Manifest(manifest.base, [e for e in manifest.incrs if e.name not in dropped],
                                       list(manifest.history)))
        for entry in later:
            os.replace(layout.path(entry.name), layout.path(entry.name) + ".dropped")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="hotkv-check-aof",
        description="Check a hotkv data directory (its appendonlydir) and repair a damaged AOF.",
    )
    parser.add_argument("dir", help="the server's dir (holding appendonlydir/) or appendonlydir itself")
    parser.add_argument("--fix", action="store_true", help="truncate at the first bad record")
    parser.add_argument("--yes", "-y", action="store_true", help="do not ask before repairing")
    parser.add_argument("--appendfilename", default=None,
                        help="the server's appendfilename (found from the manifest by default)")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.dir):
        print(f"hotkv-check-aof: {args.dir} is not a directory", file=sys.stderr)
        return 2
    try:
        layout = find_layout(args.dir, args.appendfilename)
    except ManifestError as exc:
        print(f"hotkv-check-aof: {exc}", file=sys.stderr)
        return 2

    def confirm(question: str) -> bool:
        if args.yes:
            return True
        try:
            return input(question).strip().lower() in ("y", "yes")
        except EOFError:
            return False

    return run(layout, fix=args.fix, confirm=confirm, out=print)


if __name__ == "__main__":
    sys.exit(main())
