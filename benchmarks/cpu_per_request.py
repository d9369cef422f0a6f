"""CPU time per request of a real hotkv-server and a real redis-server, user and kernel
apart, under the same redis-benchmark load: where an unpipelined request's time goes.

Run from the repository root with the project's venv::

    .venv/bin/python benchmarks/cpu_per_request.py "HSET bench:h key:__rand_int__ xxx"
    .venv/bin/python benchmarks/cpu_per_request.py "ZADD bench:z __rand_int__ m:__rand_int__" -n 300000
    .venv/bin/python benchmarks/cpu_per_request.py --setup "SCRIPT LOAD 'return 1'" \\
        "EVALSHA e0e1f9fabfc9d4800c877a703b823ac0578ff8db 0" -P 16

Both servers are started here (no persistence) and pinned to CPU 0, redis-benchmark (50
clients, ``-r 100000``) to CPU 1, as ``run.py`` places them. For each server and run, the
server process's user and system CPU seconds (``/proc/<pid>/stat``) over a fixed ``-n``
requests are divided by ``-n``; "busy" is that CPU over the wall time (below 100%: the
client, not the server, set the pace). Linux only.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import RawClient, start_hotkv, start_redis


def cpu_seconds(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", help="what redis-benchmark sends (its __rand_int__ form)")
    parser.add_argument("--setup", action="append", default=[], metavar="COMMAND",
                        help="a command sent to both servers first (shell words); repeatable")
    parser.add_argument("-P", "--pipeline", type=int, default=1)
    parser.add_argument("-n", "--requests", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hotkv-cpu-") as tmp:
        hotkv = start_hotkv(Path(tmp), "no", 0, sys.executable, [])
        redis = start_redis(Path(tmp), "no", 0, "redis-server")
        try:
            print(f"# {args.command!r} -P {args.pipeline}, {args.requests:,} requests a run")
            print("| server | run | req/s | CPU us/request | user | system | busy |")
            print("|---|---:|---:|---:|---:|---:|---:|")
            for name, pid, server_port in (("hotkv", hotkv.proc.pid, hotkv.port),
                                           ("redis", redis.proc.pid, redis.port)):
                for setup in args.setup:
                    client = RawClient(server_port)
                    try:
                        client.call(*(w.encode() for w in shlex.split(setup)))
                    finally:
                        client.close()
                for run in range(1, args.runs + 1):
                    user0, sys0 = cpu_seconds(pid)
                    started = time.monotonic()
                    subprocess.run(
                        ["taskset", "-c", "1", "redis-benchmark", "-p", str(server_port), "-c", "50",
                         "-P", str(args.pipeline), "-r", "100000", "-n", str(args.requests), "-q",
                         *shlex.split(args.command)], check=True, capture_output=True)
                    wall = time.monotonic() - started
                    user1, sys1 = cpu_seconds(pid)
                    user, system = (user1 - user0), (sys1 - sys0)
                    per = 1e6 / args.requests
                    print(f"| {name} | {run} | {args.requests / wall:,.0f} | {(user + system) * per:.2f} "
                          f"| {user * per:.2f} | {system * per:.2f} | {(user + system) / wall:.0%} |")
        finally:
            hotkv.stop()
            redis.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
