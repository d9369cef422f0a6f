"""Persistence benchmark: AOF replay speed and restart time, with and without a base snapshot.

    .venv/bin/python benchmarks/persistence_bench.py [--facts 100000] [--dim 768] [--work 1000000]

Fills a fresh server (``appendonly yes``, ``appendfsync no``, automatic rewrites off) with
``--work`` working-memory writes (``AMEM.WORK.SET`` over 1000 sessions) and then
``--facts`` semantic facts of ``--dim`` dimensions (FP32 blobs, one namespace), and measures:

* replay of the working-memory records alone (the loader's own speed);
* restart from the AOF alone: every effect replayed, each fact re-inserted into HNSW;
* restart from a base snapshot (after BGREWRITEAOF): the HNSW index is read back in
  hnswlib's own format, nothing is re-inserted.

"restart" is the wall time from spawning the process to its "ready to accept connections"
log line (Python start-up included); "load" is the loader's own time from the log. The
results are printed as a Markdown table for benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import redis

ROOT = Path(__file__).resolve().parent.parent
READY = re.compile(r"ready to accept connections on .* port (\d+)")
LOADED = re.compile(r"DB loaded from .*: (\d+) records replayed after the base in ([0-9.]+) seconds")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    def __init__(self, data_dir: str) -> None:
        self.dir = data_dir
        self.port = free_port()
        self.log = os.path.join(data_dir, "hotkv.log")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 3600) -> float:
        """Start; return the seconds until the server answered that it is ready."""
        offset = os.path.getsize(self.log) if os.path.exists(self.log) else 0
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        cmd = [sys.executable, "-m", "hotkv_server", "--port", str(self.port), "--bind", "127.0.0.1",
               "--dir", self.dir, "--logfile", self.log, "--appendonly", "yes",
               "--appendfsync", "no", "--auto-aof-rewrite-percentage", "0"]
        started = time.monotonic()
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)
        while time.monotonic() - started < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.text(offset)}")
            if READY.search(self.text(offset)):
                return time.monotonic() - started
            time.sleep(0.01)
        raise RuntimeError("server did not start")

    def text(self, offset: int = 0) -> str:
        try:
            return Path(self.log).read_text(errors="replace")[offset:]
        except OSError:
            return ""

    def stop(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(600)

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=600)


def aof_bytes(data_dir: str) -> int:
    aof = os.path.join(data_dir, "appendonlydir")
    return sum(os.path.getsize(os.path.join(aof, n)) for n in os.listdir(aof)
               if not n.endswith(".manifest"))


def fill_work(r: redis.Redis, work: int) -> float:
    started = time.monotonic()
    batch = 2000
    for start in range(0, work, batch):
        p = r.pipeline(transaction=False)
        for n in range(start, min(work, start + batch)):
            p.execute_command("AMEM.WORK.SET", f"session:{n % 1000}", f"key:{n % 5000}", f"value {n}")
        p.execute()
    return time.monotonic() - started


def fill_facts(r: redis.Redis, facts: int, dim: int) -> float:
    started = time.monotonic()
    rng = np.random.default_rng(7)
    r.execute_command("AMEM.SEM.CREATE", "kb", dim)
    batch = 200
    for start in range(0, facts, batch):
        vectors = rng.standard_normal((min(batch, facts - start), dim), dtype=np.float32)
        p = r.pipeline(transaction=False)
        for i, vec in enumerate(vectors):
            n = start + i
            p.execute_command("AMEM.SEM.STORE", "kb", f"fact:{n}", f"fact number {n}", "FP32",
                              vec.astype("<f4").tobytes(), "KIND", "fact", "CONFIDENCE", 0.9)
        p.execute()
    return time.monotonic() - started


def loaded(server: Server, offset: int) -> tuple[int, float]:
    match = LOADED.search(server.text(offset))
    assert match, server.text(offset)
    return int(match.group(1)), float(match.group(2))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--work", type=int, default=1_000_000)
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    args = parser.parse_args()
    data_dir = tempfile.mkdtemp(prefix="hotkv-persistence-bench-")
    server = Server(data_dir)
    try:
        server.start()
        r = server.client()
        print(f"filling {args.work:,} working-memory writes", flush=True)
        fill_s = fill_work(r, args.work)
        print(f"  {fill_s:.1f} s", flush=True)
        server.stop()
        offset = len(server.text())
        restart_work = server.start()
        replayed_work, load_work = loaded(server, offset)
        assert replayed_work == args.work, (replayed_work, args.work)
        r = server.client()
        print(f"filling {args.facts:,} facts x {args.dim} dims", flush=True)
        fill_s = fill_facts(r, args.facts, args.dim)
        print(f"  {fill_s:.1f} s", flush=True)
        server.stop()
        records = args.facts + args.work + 1
        size = aof_bytes(data_dir)

        offset = len(server.text())
        restart_aof = server.start()
        replayed, load_aof = loaded(server, offset)
        assert replayed == records, (replayed, records)
        r = server.client()
        assert r.execute_command("AMEM.WORK.LEN", "session:1") == 5
        started = time.monotonic()
        r.bgrewriteaof()
        while int(r.info("persistence")["aof_rewrite_in_progress"]):
            time.sleep(0.1)
        rewrite_s = time.monotonic() - started
        server.stop()
        base = aof_bytes(data_dir)

        offset = len(server.text())
        restart_base = server.start()
        replayed_base, load_base = loaded(server, offset)
        assert replayed_base == 0
        r = server.client()
        info = r.execute_command("AMEM.SEM.INFO", "kb")
        server.stop()

        facts_s = load_aof - load_work  # the facts' share of the full replay
        print()
        print(f"| {args.facts:,} facts x {args.dim} dims + {args.work:,} WORK.SET "
              f"({records:,} records) | |")
        print("|---|---|")
        print(f"| replay of the {args.work:,} WORK.SET records alone | {load_work:.2f} s, "
              f"{replayed_work / load_work:,.0f} records/s (restart {restart_work:.1f} s) |")
        print(f"| AOF of everything (effects only) | {size / 2**20:,.0f} MiB |")
        print(f"| replay of everything from the AOF alone | {load_aof:.1f} s, "
              f"{replayed / load_aof:,.0f} records/s; the facts ~{args.facts / max(facts_s, 1e-9):,.0f}/s "
              "(each re-inserted into HNSW) |")
        print(f"| restart from the AOF alone (spawn to ready) | {restart_aof:.1f} s |")
        print(f"| BGREWRITEAOF (fork, write the base) | {rewrite_s:.1f} s, base {base / 2**20:,.0f} MiB |")
        print(f"| load of the base snapshot | {load_base:.2f} s |")
        print(f"| restart from the base (spawn to ready) | {restart_base:.1f} s |")
        print(f"| restart speed-up from the snapshot | {restart_aof / restart_base:.1f}x |")
        print(f"\n(semantic namespace after the restart: {info})")
    finally:
        if server.proc is not None and server.proc.poll() is None:
            server.proc.kill()
        if not args.keep:
            shutil.rmtree(data_dir, ignore_errors=True)
        else:
            print(f"data kept in {data_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
