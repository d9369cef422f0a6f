"""The manifest and the names of the files it lists (Redis 7's multi-part AOF layout).

Everything lives in ``<dir>/appendonlydir/``::

    appendonly.aof.manifest          which files make up the data, in order
    appendonly.aof.3.base.hkv        base snapshot (frames, see snapshot.py)
    appendonly.aof.5.incr.aof        effects since that base (frames, one event-loop turn each)
    appendonly.aof.6.incr.aof        ... more while a rewrite is running
    temp-<name>                      a file being written; renamed to <name> when complete

The manifest is a few text lines in Redis's format, replaced atomically::

    file appendonly.aof.3.base.hkv seq 3 type b
    file appendonly.aof.5.incr.aof seq 5 type i
    file appendonly.aof.2.base.hkv seq 2 type h

``type h`` marks history: files replaced by a finished rewrite, listed until they are
deleted so that a file of ours which no manifest ever listed can only mean damage.

Rules that make a crash at any instant recoverable, and damage recognisable:

* A data file gets its final name only after a manifest naming it was written (the
  manifest may name ``X`` while only ``temp-X`` exists: startup completes the rename), or
  while it is still empty (a new increment, created just before the manifest that adds it).
  So a non-empty file that no manifest lists is damage, never a leftover.
* Incremental files in one manifest have consecutive sequence numbers: a rewrite adds the
  next one, and a finished rewrite keeps only the newest. A gap means an entry went
  missing, which loading refuses rather than replaying history with a hole in it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from hotkv_server.persistence.fsutil import atomic_write

AOF_DIRNAME = "appendonlydir"
HEADER = "# hotkv append-only manifest v1 (see docs/persistence.md)\n"


class ManifestError(Exception):
    """The manifest cannot be read or names files that are not there."""


@dataclass(frozen=True)
class Entry:
    name: str
    seq: int
    kind: str  # "b" base, "i" incremental

    def line(self) -> str:
        return f"file {self.name} seq {self.seq} type {self.kind}\n"


@dataclass
class Manifest:
    base: Entry | None = None
    incrs: list[Entry] = field(default_factory=list)
    history: list[Entry] = field(default_factory=list)  # replaced files not yet deleted

    def entries(self) -> list[Entry]:
        """The files that make up the data, in load order (history excluded)."""
        return ([self.base] if self.base else []) + list(self.incrs)

    def render(self) -> bytes:
        lines = [e.line() for e in self.entries()]
        lines += [f"file {e.name} seq {e.seq} type h\n" for e in self.history]
        return (HEADER + "".join(lines)).encode()


class Layout:
    """File names of one data directory, derived from ``dir`` and ``appendfilename``."""

    def __init__(self, data_dir: str, appendfilename: str = "appendonly.aof") -> None:
        if not appendfilename or "/" in appendfilename or appendfilename.startswith("."):
            raise ManifestError(f"appendfilename must be a plain file name, got '{appendfilename}'")
        self.data_dir = data_dir
        self.prefix = appendfilename
        self.aof_dir = os.path.join(data_dir, AOF_DIRNAME)
        self.manifest_path = os.path.join(self.aof_dir, f"{appendfilename}.manifest")
        self._pattern = re.compile(re.escape(appendfilename) + r"\.(\d+)\.(base\.hkv|incr\.aof)")

    def path(self, name: str) -> str:
        return os.path.join(self.aof_dir, name)

    def base_name(self, seq: int) -> str:
        return f"{self.prefix}.{seq}.base.hkv"

    def incr_name(self, seq: int) -> str:
        return f"{self.prefix}.{seq}.incr.aof"

    @staticmethod
    def temp_name(name: str) -> str:
        """Where a data file is written before it gets its name."""
        return f"temp-{name}"

    def parse_name(self, name: str) -> Entry | None:
        """The entry a file name stands for, or None when it is none of ours."""
        match = self._pattern.fullmatch(name)
        if match is None:
            return None
        return Entry(name, int(match.group(1)), "b" if match.group(2) == "base.hkv" else "i")

    def data_files(self) -> list[Entry]:
        """Every base and incremental file present in the directory."""
        try:
            names = os.listdir(self.aof_dir)
        except FileNotFoundError:
            return []
        found = [self.parse_name(n) for n in names]
        return sorted((e for e in found if e is not None), key=lambda e: (e.seq, e.kind))

    def temp_files(self) -> list[str]:
        try:
            return sorted(n for n in os.listdir(self.aof_dir) if n.startswith("temp-"))
        except FileNotFoundError:
            return []

    # --- manifest -------------------------------------------------------------------
    def read_manifest(self) -> Manifest | None:
        """The manifest, or None if there is none; ManifestError if it is malformed."""
        try:
            with open(self.manifest_path, "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            return None
        return self.parse_manifest(raw)

    def parse_manifest(self, raw: bytes) -> Manifest:
        where = self.manifest_path
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ManifestError(f"{where}: not UTF-8 text") from None
        manifest = Manifest()
        for lineno, line in enumerate(text.splitlines(), 1):
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            words = stripped.split()
            if len(words) % 2 or words[0] != "file":
                raise ManifestError(f"{where} line {lineno}: expected 'file <name> seq <n> type b|i|h'")
            pairs = dict(zip(words[0::2], words[1::2], strict=True))
            name, seq_text, kind = pairs.get("file"), pairs.get("seq"), pairs.get("type")
            if name is None or seq_text is None or kind not in ("b", "i", "h") or not seq_text.isdigit():
                raise ManifestError(f"{where} line {lineno}: expected 'file <name> seq <n> type b|i|h'")
            entry = self.parse_name(name)
            if entry is None or entry.seq != int(seq_text) or (kind != "h" and entry.kind != kind):
                raise ManifestError(
                    f"{where} line {lineno}: '{name}' does not match seq {seq_text} type {kind}"
                )
            if kind == "h":
                manifest.history.append(entry)
            elif kind == "b":
                if manifest.base is not None or manifest.incrs:
                    raise ManifestError(f"{where} line {lineno}: the base must be the one first entry")
                manifest.base = entry
            else:
                if manifest.incrs and entry.seq != manifest.incrs[-1].seq + 1:
                    missing = manifest.incrs[-1].seq + 1
                    raise ManifestError(
                        f"{where} line {lineno}: incremental file seq {missing} is missing "
                        f"(found {entry.seq} after {manifest.incrs[-1].seq})"
                    )
                manifest.incrs.append(entry)
        return manifest

    def write_manifest(self, manifest: Manifest, *, renamed: Callable[[], None] | None = None) -> None:
        """Replace the manifest atomically; ``renamed`` as in ``fsutil.atomic_write``."""
        atomic_write(self.manifest_path, manifest.render(), renamed=renamed)

    def check_files_exist(self, manifest: Manifest) -> None:
        for entry in manifest.entries():
            if not os.path.exists(self.path(entry.name)):
                raise ManifestError(
                    f"{self.manifest_path} names {entry.name}, which is not in {self.aof_dir}"
                )
