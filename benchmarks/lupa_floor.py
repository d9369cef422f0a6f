"""What the Lua side alone costs an EVALSHA, in process: hotkv's script sandbox (lupa's Lua
5.1 with bootstrap.lua's ``run``) running the benchmark's scripts with a host
``redis.call`` that does nothing but return a canned reply, so no command runs.

    .venv/bin/python benchmarks/lupa_floor.py

Rows: run.py's EVALSHA script (three calls: SET, INCR, GET, with two keys and one
argument, as redis-benchmark sends them), and ``return 1`` with the same keys and
argument (the call into Lua and back, KEYS and ARGV built, no ``redis.call``). Their
difference is what the three crossings from Lua into Python cost before any command runs.
Prints microseconds per run, CPU time, the best of ``--repeat`` rounds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
if not any(Path(p, "hotkv_server").is_dir() for p in sys.path if p):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from run import EVALSHA_SCRIPT

from hotkv_server.scripting.sandbox import Sandbox

#: run.py's EVALSHA row's script, and the same call with no redis.call
SCRIPTS = {"3 calls (SET, INCR, GET)": EVALSHA_SCRIPT, "return 1": b"return 1"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100_000, help="script runs per round")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    replies: dict[bytes, Any] = {}

    def call(*argv: Any) -> Any:
        return replies[argv[0]]

    sandbox = Sandbox(call, call, lambda: False, lambda *a: None, lambda *a: True)
    # what the server's redis.call hands back for these commands: a status table, an
    # integer and a bulk string
    replies.update({b"SET": sandbox.runtime.eval("{ok = 'OK'}"), b"INCR": 12345,
                    b"GET": b"xxx"})
    run = sandbox.run_varargs
    for name, body in SCRIPTS.items():
        fn, error = sandbox.compile(body)
        assert fn is not None, error
        best = float("inf")
        for _ in range(args.repeat):
            started = time.process_time()
            for _ in range(args.runs):
                run(fn, 2, b"key:000000012345", b"bench:counter", b"xxx")
            best = min(best, time.process_time() - started)
        print(f"{name}: {best / args.runs * 1e6:.2f} us")


if __name__ == "__main__":
    main()
