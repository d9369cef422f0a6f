"""Where a real hotkv-server's time goes under redis-benchmark: ``perf record`` of the
pinned server process, summarised by shared object and by symbol.

Run from the repository root with the project's venv (needs ``perf`` and the right to
profile a process, e.g. root)::

    .venv/bin/python benchmarks/profile_server.py                    # SET -P 16
    .venv/bin/python benchmarks/profile_server.py --command "GET key:__rand_int__" -P 1
    HOTKV_PURE=1 .venv/bin/python benchmarks/profile_server.py       # the pure-Python build

It starts ``python -m hotkv_server --appendonly no`` pinned to CPU 0 (run.py's placement,
redis-benchmark on CPU 1), fills nothing beyond what the command writes, runs
redis-benchmark (50 clients, ``-r 100000``) for ``--seconds`` while ``perf record`` samples
the server, and prints the share of samples per shared object (the interpreter, the
kernel, the compiled hot path's group library, hiredis, uvloop, ...) and the top symbols.
The server's INFO ``hot_path`` line says which build ran.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import RawClient, start_hotkv


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--command", default="SET key:__rand_int__ xxx",
                        help="what redis-benchmark sends (its __rand_int__ form)")
    parser.add_argument("-P", "--pipeline", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--setup", action="append", default=[], metavar="COMMAND",
                        help="a command sent before the run (shell words), e.g. "
                             "'SCRIPT LOAD \"return 1\"' for an EVALSHA row; repeatable")
    return parser.parse_args()


def info_field(port: int, section: str, name: str) -> str:
    client = RawClient(port)
    try:
        text = client.call(b"INFO", section.encode())
    finally:
        client.close()
    for line in (text.decode() if isinstance(text, bytes) else str(text)).splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1]
    return "?"


def shares(report: str) -> list[tuple[float, str]]:
    """``perf report --stdio`` lines ``  12.34%  name``: (percent, name)."""
    out = []
    for line in report.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[0].endswith("%"):
            try:
                out.append((float(parts[0][:-1]), parts[1].strip()))
            except ValueError:
                continue
    return out


def main() -> int:
    args = parse_args()
    perf = shutil.which("perf")
    bench = shutil.which("redis-benchmark")
    if not perf or not bench:
        print("needs perf and redis-benchmark", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="hotkv-profile-") as tmp:
        work = Path(tmp)
        server = start_hotkv(work, "no", 0, args.python, [])
        try:
            build = info_field(server.port, "server", "hot_path")
            for setup in args.setup:
                client = RawClient(server.port)
                try:
                    print(f"# setup {setup!r}: {client.call(*(w.encode() for w in shlex.split(setup)))!r}")
                finally:
                    client.close()
            data = work / "perf.data"
            words = shlex.split(args.command)
            load = subprocess.Popen(
                ["taskset", "-c", "1", bench, "-p", str(server.port), "-c", "50",
                 "-P", str(args.pipeline), "-r", "100000", "-n", "100000000", "-q", *words],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.0)  # past the connects
            subprocess.run([perf, "record", "-q", "-F", "1999", "-p", str(server.proc.pid),
                            "-o", str(data), "--", "sleep", str(args.seconds)],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            load.terminate()
            load.wait(10)
            by_dso = subprocess.run([perf, "report", "-i", str(data), "--stdio", "--sort", "dso",
                                     "-q"], capture_output=True, text=True, check=True).stdout
            by_sym = subprocess.run([perf, "report", "-i", str(data), "--stdio", "--sort",
                                     "dso,sym", "-q"], capture_output=True, text=True,
                                    check=True).stdout
        finally:
            server.stop()
    print(f"# {args.command!r} -P {args.pipeline}, {args.seconds:.0f} s of samples; "
          f"hot path: {build}")
    print("\n| shared object | share of samples |\n|---|---:|")
    grouped: Counter[str] = Counter()
    for pct, name in shares(by_dso):
        grouped[name] += pct
    for name, pct in grouped.most_common(12):
        print(f"| {name} | {pct:.1f}% |")
    print("\n| symbol (shared object) | share |\n|---|---:|")
    for pct, name in shares(by_sym)[: args.top]:
        print(f"| {' '.join(name.split())} | {pct:.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
