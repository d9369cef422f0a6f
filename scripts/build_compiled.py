"""Build the compiled hot path (mypyc) into src/hotkv_server, when its sources changed.

Run by scripts/test and scripts/serve after their pip install, with the venv's Python:

    .venv/bin/python scripts/build_compiled.py           # build if needed (usually: nothing)
    .venv/bin/python scripts/build_compiled.py --clean   # remove the compiled files: pure

The modules of hotkv_server._compiled.MODULES are compiled in a temporary directory and
only their ``.so`` files (and mypyc's group library) are copied beside the sources, with a
stamp holding the hash of the sources, the Python and the mypyc version they were built
from. When the stamp still matches, nothing is done. Without a C compiler, Python's headers
or mypyc, or when the compile fails, the compiled files are removed and the server runs
the pure-Python modules (one line says so here, and the server's log names the build).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
sys.path.insert(0, str(SRC))

from hotkv_server import _compiled  # noqa: E402

PKG = SRC / "hotkv_server"

SETUP = """
import sys
from setuptools import setup
from mypyc.build import mypycify
setup(
    name="hotkv-hotpath",
    ext_modules=mypycify(["--config-file", "mypy.ini", *sys.argv[1:]], opt_level="3",
                         group_name=%r),
    script_args=["build_ext", "--inplace"],
)
"""

MYPY_INI = """[mypy]
ignore_missing_imports = True
check_untyped_defs = True
no_implicit_optional = True
"""


def say(line: str) -> None:
    print(f"hot path: {line}", file=sys.stderr, flush=True)


def mypyc_version() -> str | None:
    try:
        import mypyc  # noqa: F401
        from mypy.version import __version__
    except ImportError:
        return None
    return str(__version__)


def clean() -> None:
    for path in _compiled.compiled_files(PKG):
        path.unlink(missing_ok=True)


def fail(reason: str, want: dict[str, object]) -> int:
    clean()
    _compiled.STAMP.write_text(json.dumps({**want, "failed": reason}) + "\n")
    say(f"pure Python ({reason})")
    return 0


def compile_into(tmp: Path) -> list[Path]:
    """mypyc in a copy of the package; the extension files it built, relative to tmp."""
    shutil.copytree(PKG, tmp / "hotkv_server",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd", "*.stamp"))
    (tmp / "mypy.ini").write_text(MYPY_INI)
    paths = [f"hotkv_server/{rel}" for rel in _compiled.MODULES]
    log = tmp / "build.log"
    with log.open("w") as out:
        done = subprocess.run(
            [sys.executable, "-c", SETUP % _compiled.GROUP, *paths],
            cwd=tmp, stdout=out, stderr=subprocess.STDOUT, check=False,
        )
    if done.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-15:]
        print("\n".join(tail), file=sys.stderr)
        raise RuntimeError(f"mypyc failed (exit {done.returncode})")
    built = _compiled.compiled_files(tmp / "hotkv_server")
    if not built:
        raise RuntimeError("mypyc built no extension modules")
    return [path.relative_to(tmp / "hotkv_server") for path in built]


def main(argv: list[str]) -> int:
    if "--clean" in argv:
        clean()
        _compiled.STAMP.unlink(missing_ok=True)
        say("compiled files removed: pure Python")
        return 0
    version = mypyc_version()
    want: dict[str, object] = {
        "sources": _compiled.source_hash(PKG),
        "mypyc": version,
        "modules": list(_compiled.MODULES),
    }
    stamp = _compiled.read_stamp()
    if stamp is not None and all(stamp.get(k) == v for k, v in want.items()):
        if not stamp.get("failed") and stamp.get("files") == _compiled.built_names(PKG):
            return 0                                    # built from these sources: nothing to do
        if str(stamp.get("failed", "")).startswith("mypyc failed"):
            say(f"pure Python ({stamp['failed']}; unchanged sources, not retried)")
            return 0
    if os.environ.get("HOTKV_PURE", "") not in ("", "0"):
        say("not built (HOTKV_PURE=1)")
        return 0
    missing = _compiled.build_tools_missing()
    if version is None:
        missing = "mypyc not installed"
    if missing:
        return fail(missing, want)
    say(f"compiling {len(_compiled.MODULES)} modules with mypyc "
        "(once per change of their sources; a minute or two)")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hotkv-mypyc-") as name:
        tmp = Path(name)
        try:
            built = compile_into(tmp)
        except (RuntimeError, OSError) as exc:
            return fail(str(exc), want)
        clean()
        for rel in built:
            # a new file renamed over the path: a running server keeps its mapped old one
            staged = (PKG / rel).with_name(f".{rel.name}.new")
            shutil.copy2(tmp / "hotkv_server" / rel, staged)
            os.replace(staged, PKG / rel)
    _compiled.STAMP.write_text(json.dumps({**want, "files": _compiled.built_names(PKG)}) + "\n")
    say(f"compiled (mypyc, {len(_compiled.MODULES)} modules, {time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
