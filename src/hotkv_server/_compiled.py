"""Which build of the hot path runs: the mypyc-compiled modules or their pure-Python sources.

``scripts/build_compiled.py`` (run by ``scripts/test`` and ``scripts/serve``) compiles the
modules of :data:`MODULES` with mypyc into ``.so`` files beside their ``.py`` files and writes
:data:`STAMP` with a hash of the sources it compiled. An extension module beside a ``.py``
file shadows it, so an edited module whose old ``.so`` is still there would run the old code;
:func:`activate` (called by ``hotkv_server/__init__``, before any of these modules is
imported) hashes the current sources and, when they are not the ones compiled, or
``HOTKV_PURE=1`` is set, puts a finder in front of the import system that loads the ``.py``
of every listed module instead. :data:`STATE` names the build for the start-up log line
and ``INFO server`` (``hot_path``).

Standard library only: it runs on every import of the package.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

PACKAGE_DIR = Path(__file__).resolve().parent

#: the modules every command passes (request reading and framing, the connection, dispatch,
#: argument parsing, reply encoding, the effect log, the keyspace and the string and
#: working-memory commands), relative to the package: measured in benchmarks/README.md ("A
#: compiled hot path"); and the modules of the classes compiled code reads on every command
#: (the command spec, the core, a client's context, the turn, the blocked clients, the
#: database), so their fields are C struct fields, not attribute lookups; and the handlers of
#: the hash, set, list and sorted-set commands, which then read those fields and call the
#: keyspace and ctx.emit directly, their value types (native classes) and EVAL's engine
#: (docs/architecture.md, "The compiled hot path")
MODULES: tuple[str, ...] = (
    "server/reader.py",
    "server/framing.py",
    "server/resp.py",
    "server/connection.py",
    "engine/args.py",
    "engine/doubles.py",
    "engine/core.py",
    "engine/dispatch.py",
    "engine/registry.py",
    "engine/effects.py",
    "engine/turn.py",
    "engine/blocking.py",
    "stores/database.py",
    "stores/keyspace.py",
    "commands/strings.py",
    "commands/work.py",
    "commands/typed.py",
    "commands/containers.py",
    "commands/hashes.py",
    "commands/sets.py",
    "commands/lists.py",
    "commands/zsets.py",
    "commands/zset_ranges.py",
    "stores/values.py",
    "stores/hashes.py",
    "stores/sets.py",
    "stores/listvalue.py",
    "stores/zsetvalue.py",
    "stores/workpad.py",
    "scripting/engine.py",
    "scripting/convert.py",
    "commands/scripting.py",
    "stores/effect.py",
    "stores/keyspace_effects.py",
    "stores/hashes_effects.py",
    "stores/sets_effects.py",
    "stores/list_effects.py",
    "stores/zset_effects.py",
    "stores/work_effects.py",
    "stores/conv_effects.py",
    "stores/sem_effects.py",
    "stores/epis_effects.py",
    "stores/summary_effects.py",
    "stores/vectorset_effects.py",
    "stores/vsnap_effects.py",
    "stores/dedup_effects.py",
    "commands/conv.py",
)

#: the name of the shared library mypyc builds for the group (the modules' code; each
#: module's own ``.so`` is a small shim that loads it)
GROUP = "hotkv_server._hotpath"

#: written by the build step: {"sources": source_hash(), "mypyc": version, "modules": [...],
#: "files": built_names()}
STAMP = PACKAGE_DIR / "_hotpath.stamp"

#: one line for the log and INFO: "compiled (mypyc, 9 modules)" or "pure Python (<why>)"
STATE = "pure Python (not built)"
COMPILED = False


def source_hash(package_dir: Path = PACKAGE_DIR, modules: Sequence[str] = MODULES) -> str:
    """A hash of the listed sources, their list and the Python that runs them."""
    digest = hashlib.sha256()
    digest.update(sys.version.encode())
    digest.update(sys.implementation.cache_tag.encode())
    for rel in modules:
        digest.update(rel.encode() + b"\0")
        digest.update((package_dir / rel).read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def read_stamp(path: Path = STAMP) -> dict[str, object] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def compiled_files(package_dir: Path = PACKAGE_DIR) -> list[Path]:
    """The extension files a build put into the package: the group library and a shim
    beside each compiled ``.py`` (also of a module no longer listed: a stale build)."""
    group = GROUP.rsplit(".", 1)[1] + "__mypyc."
    found = []
    for pattern in ("*.so", "*.pyd"):
        for path in package_dir.rglob(pattern):
            if path.name.startswith(group) or (
                    path.parent / (path.name.split(".", 1)[0] + ".py")).is_file():
                found.append(path)
    return found


def _source_of(package_dir: Path, so: Path) -> tuple[str, Path] | None:
    """(module name, its .py) of a compiled shim, None for the group library."""
    source = so.parent / (so.name.split(".", 1)[0] + ".py")
    if not source.is_file():
        return None
    parts = source.relative_to(package_dir).with_suffix("").parts
    return ".".join((package_dir.name, *parts)), source


def build_tools_missing() -> str | None:
    """None when a C compiler and this Python's headers are there (what mypyc needs), else
    what is missing."""
    import shlex
    import shutil
    import sysconfig

    compiler = os.environ.get("CC") or str(sysconfig.get_config_var("CC") or "cc")
    words = shlex.split(compiler)
    if not words or shutil.which(words[0]) is None:
        return "no C compiler"
    include = sysconfig.get_paths().get("include")
    if not include or not (Path(include) / "Python.h").is_file():
        return "no Python headers"
    return None


class _PureFinder(importlib.abc.MetaPathFinder):
    """Loads the ``.py`` source of a listed module, never its compiled ``.so``."""

    def __init__(self, paths: dict[str, Path]) -> None:
        self.paths = paths

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        source = self.paths.get(fullname)
        if source is None:
            return None
        return importlib.util.spec_from_file_location(fullname, source)


def _why_pure(package_dir: Path, built: list[Path]) -> str | None:
    """None when the compiled build may run, else why not (``built``: the package's
    compiled files, :func:`compiled_files`)."""
    if os.environ.get("HOTKV_PURE", "") not in ("", "0"):
        return "HOTKV_PURE=1"
    stamp = read_stamp(package_dir / STAMP.name)
    if stamp is None:
        return "not built" if not built else "no build stamp"
    if stamp.get("failed"):
        return str(stamp["failed"])
    try:
        current = source_hash(package_dir)
    except OSError:
        return "sources unreadable"
    if stamp.get("sources") != current:
        return "sources changed since the build"
    if stamp.get("files") != built_names(package_dir, built):
        return "compiled files differ from the build"
    return None


def built_names(package_dir: Path = PACKAGE_DIR, built: list[Path] | None = None) -> list[str]:
    """The compiled files in the package, relative to it, sorted (the stamp's ``files``)."""
    if built is None:
        built = compiled_files(package_dir)
    return sorted(str(p.relative_to(package_dir)) for p in built)


def activate(package_dir: Path = PACKAGE_DIR) -> str:
    """Decide the build once, at the package's import; returns :data:`STATE`."""
    global STATE, COMPILED
    built = compiled_files(package_dir)  # one walk of the package per start
    why = _why_pure(package_dir, built)
    if why is None:
        count = sum(1 for so in built if _source_of(package_dir, so) is not None)
        if count:
            COMPILED = True
            STATE = f"compiled (mypyc, {count} modules)"
            return STATE
        why = "not built"
    sources = dict(filter(None, (_source_of(package_dir, so) for so in built)))
    if sources and not any(isinstance(f, _PureFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _PureFinder(sources))
    COMPILED = False
    STATE = f"pure Python ({why})"
    return STATE
