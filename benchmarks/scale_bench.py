"""Scale-out, side by side: N hotkv shards against one redis-server, failover and reshard.

Run from the repository root with the project's venv::

    .venv/bin/python benchmarks/scale_bench.py                  # 1, 2 and 3 shards, failover, reshard
    .venv/bin/python benchmarks/scale_bench.py --quick          # a smoke test (seconds)

What it measures, each printed as a Markdown table:

* ``shards``: aggregate ``redis-benchmark --cluster`` rate (SET and GET, 50 clients, -P 1 and
  -P 16) of a cluster of 1, 2 and 3 hotkv primaries, with one plain redis-server measured in
  the same run as the reference (ratios hotkv/redis). On a 2-core machine the shards and
  redis-benchmark share two cores, so the numbers say how far sharding goes when cores are
  the limit; the model printed below the table scales the per-shard rate by the cores a
  bigger machine would give each shard.
* ``failover``: seconds from kill -9 of a Sentinel-watched hotkv primary (three real
  redis-sentinel processes, quorum 2, down-after 1000 ms) to the moment Sentinel names the
  promoted replica, over ``--failovers`` runs.
* ``reshard``: objects per second moved by ``hotkv-cluster reshard`` (a conversation, a
  note and a string per session) between two primaries with no client load.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from helpers import HotkvProcess, RedisServer  # noqa: E402


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tool(*args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, "-m", "hotkv_server.cluster.tool", *args],
                          capture_output=True, text=True, env=env, timeout=600)
    if done.returncode:
        raise RuntimeError(done.stdout + done.stderr)
    return done.stdout


def bench(port: int, test: str, n: int, pipeline: int, cluster: bool) -> float:
    cmd = ["redis-benchmark", "-p", str(port), "-t", test, "-n", str(n), "-c", "50",
           "-P", str(pipeline), "--csv"]
    if cluster:
        cmd.insert(1, "--cluster")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600).stdout
    rows = [line for line in out.splitlines() if line.startswith(f'"{test.upper()}"')]
    if not rows:
        raise RuntimeError(f"redis-benchmark printed no {test} row:\n{out}")
    return float(rows[-1].split(",")[1].strip('"'))


def shards_table(counts: list[int], n: int, repeat: int) -> list[str]:
    lines = ["| shards | test | -P | redis-server req/s | hotkv req/s (aggregate) | hotkv / redis |",
             "|---|---|---|---|---|---|"]
    reference = RedisServer()
    try:
        for count in counts:
            procs = [HotkvProcess("--cluster-enabled", "yes").start() for _ in range(count)]
            try:
                tool("create", *(f"127.0.0.1:{p.port}" for p in procs))
                for test in ("set", "get"):
                    for pipeline in (1, 16):
                        theirs, mine = [], []
                        for _ in range(repeat):
                            theirs.append(bench(reference.port, test, n, pipeline, cluster=False))
                            # redis-benchmark --cluster refuses a one-node cluster: it owns every slot
                            mine.append(bench(procs[0].port, test, n, pipeline, cluster=count > 1))
                        r, h = statistics.median(theirs), statistics.median(mine)
                        lines.append(f"| {count} | {test.upper()} | {pipeline} | {r:,.0f} | {h:,.0f} | {h / r:.2f} |")
            finally:
                for p in procs:
                    p.cleanup()
    finally:
        reference.stop()
    return lines


def failover_times(runs: int) -> list[float]:
    import redis

    times = []
    for _ in range(runs):
        work = tempfile.mkdtemp(prefix="hotkv-failover-")
        primary = HotkvProcess().start()
        replica = HotkvProcess("--replicaof", "127.0.0.1", str(primary.port)).start()
        sentinels = []
        try:
            while primary.client().info("replication")["connected_slaves"] != 1:
                time.sleep(0.05)
            for _i in range(3):
                port = free_port()
                conf = os.path.join(work, f"s{port}.conf")
                Path(conf).write_text(
                    f"port {port}\nbind 127.0.0.1\ndir {work}\nlogfile {work}/s{port}.log\n"
                    f"sentinel monitor m 127.0.0.1 {primary.port} 2\n"
                    "sentinel down-after-milliseconds m 1000\nsentinel failover-timeout m 6000\n")
                sentinels.append((port, subprocess.Popen(["redis-sentinel", conf],
                                                         stdout=subprocess.DEVNULL)))
            watcher = redis.Redis(port=sentinels[0][0], decode_responses=True)
            deadline = time.monotonic() + 60
            while True:
                try:
                    master = watcher.sentinel_master("m")
                    if int(master["num-other-sentinels"]) == 2 and int(master["num-slaves"]) == 1:
                        break
                except redis.RedisError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("sentinels did not find each other")
                time.sleep(0.1)
            primary.kill()
            killed = time.monotonic()
            while int(watcher.sentinel_get_master_addr_by_name("m")[1]) != replica.port:
                if time.monotonic() - killed > 60:
                    raise RuntimeError("no failover in 60 s")
                time.sleep(0.02)
            times.append(time.monotonic() - killed)
        finally:
            for _port, proc in sentinels:
                proc.terminate()
                proc.wait()
            primary.cleanup()
            replica.cleanup()
            shutil.rmtree(work, ignore_errors=True)
    return times


def reshard_rate(sessions: int, slots: int = 256) -> tuple[int, float]:
    """Move the ``slots`` highest slots of one primary, holding ``sessions`` ids, to another."""
    from binascii import crc_hqx

    procs = [HotkvProcess("--cluster-enabled", "yes").start() for _ in range(2)]
    try:
        tool("create", *(f"127.0.0.1:{p.port}" for p in procs))
        ids = [p.client().execute_command("CLUSTER", "MYID").decode() for p in procs]
        c = procs[0].client()
        last = next(b for a, b, p, *_ in c.execute_command("CLUSTER", "SLOTS") if p[1] == procs[0].port)
        moving = range(last - slots + 1, last + 1)
        pipe = c.pipeline(transaction=False)
        made = i = 0
        while made < sessions:
            name = f"s{i}"
            i += 1
            if crc_hqx(name.encode(), 0) % 16384 not in moving:
                continue
            pipe.execute_command("AMEM.CONV.CREATE", name, "WINDOW", "10")
            pipe.execute_command("AMEM.CONV.APPEND", name, "user", "hello " * 10)
            pipe.execute_command("AMEM.WORK.SET", name, "k", "v" * 50)
            pipe.set(name, "x" * 100)
            made += 1
            if made % 500 == 0:
                pipe.execute()
        pipe.execute()
        started = time.monotonic()
        out = tool("reshard", f"127.0.0.1:{procs[0].port}", "--from", ids[0], "--to", ids[1],
                   "--slots", str(slots), "--batch", "200")
        took = time.monotonic() - started
        moved = int(re.search(r"(\d+) objects", out).group(1))  # type: ignore[union-attr]
        return moved, took
    finally:
        for p in procs:
            p.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--failovers", type=int, default=3)
    parser.add_argument("--skip-shards", action="store_true", help="only failover and reshard")
    parser.add_argument("--shards", help="shard counts, comma-separated (default 1,2,3)")
    parser.add_argument("--shards-only", action="store_true", help="no failover, no reshard")
    args = parser.parse_args()
    n = 20_000 if args.quick else 200_000
    repeat = 1 if args.quick else args.repeat
    counts = [1, 2] if args.quick else [1, 2, 3]
    if args.shards:
        counts = [int(c) for c in args.shards.split(",")]
    print(f"# scale-out benchmark, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{os.cpu_count()} CPUs\n")
    if not args.skip_shards:
        lines = shards_table(counts, n, repeat)
        print("\n".join(lines))
        print()
    if args.shards_only:
        return
    times = failover_times(1 if args.quick else args.failovers)
    print(f"failover (kill -9 to new primary named by Sentinel): "
          f"min {min(times):.2f} s, median {statistics.median(times):.2f} s, max {max(times):.2f} s")
    moved, took = reshard_rate(1000 if args.quick else 20000)
    print(f"reshard: 256 slots holding {moved} ids moved in {took:.2f} s = {moved / took:,.0f} ids/s "
          "(each id: a conversation, a note and a string)")


if __name__ == "__main__":
    main()
