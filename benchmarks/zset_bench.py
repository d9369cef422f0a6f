"""Sorted sets as they grow to 1M members: ZADD, ZRANGE, ZRANGEBYSCORE and ZRANK rates at
1k, 100k and 1M members, hotkv beside redis-server, and the memory per member.

    .venv/bin/python benchmarks/zset_bench.py                 # sizes 1000,100000,1000000
    .venv/bin/python benchmarks/zset_bench.py --sizes 1000,100000 --seconds 1

A structure whose ZADD or ZRANGE costs O(n) shows it as a rate falling with the size; an
O(log n) one keeps its rate within noise from 1k to 1M. Memory per member is the growth of
``used_memory`` (redis-server: its allocator's count) or of the RSS (hotkv) while the set is
filled, divided by the members added, and the structure alone measured with tracemalloc;
members are ``m:<12 digits>`` (14 bytes) with integer scores, the same on both servers.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run

KEY = b"bench:big"


def used_memory(client: run.RawClient, field: str) -> int:
    text = client.call(b"INFO", b"memory")
    for line in text.decode().splitlines():
        if line.startswith(field + ":"):
            return int(line.split(":")[1])
    raise RuntimeError(f"no {field} in INFO memory")


def structure_bytes(members: int) -> float:
    """Bytes per member of a SortedSetValue alone, measured in this process (tracemalloc)."""
    import tracemalloc

    sys.path.insert(0, str(run.ROOT / "src"))
    from hotkv_server.stores.zsetvalue import SortedSetValue

    tracemalloc.start()
    value = SortedSetValue()
    for i in range(members):
        value.add(b"m:%012d" % i, float(i))
    size = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del value
    return size / members


def fill(client: run.RawClient, start: int, stop: int) -> None:
    run._fill(client, ((b"ZADD", KEY, b"%d" % i, b"m:%012d" % i) for i in range(start, stop)))


def rate(server: run.ServerProcess, binary: str, args: list[str], pipeline: int,
         seconds: float, cpu: int | None) -> float:
    probe = run.redis_benchmark(binary, server.port, args, pipeline, 2000 * pipeline, cpu)
    requests = max(1000, int(probe.rps * seconds))
    return run.redis_benchmark(binary, server.port, args, pipeline, requests, cpu).rps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000,1000000")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--pipeline", type=int, default=1)
    options = parser.parse_args()
    sizes = [int(s) for s in options.sizes.split(",")]
    binary = shutil.which("redis-benchmark")
    redis_binary = shutil.which("redis-server")
    if binary is None or redis_binary is None:
        raise SystemExit("redis-server and redis-benchmark must be on the PATH")
    pin = shutil.which("taskset") is not None
    server_cpu, bench_cpu = (0, 1) if pin else (None, None)
    with tempfile.TemporaryDirectory(prefix="zset-bench-") as tmp:
        work = Path(tmp)
        servers = [run.start_redis(work, "no", server_cpu, redis_binary),
                   run.start_hotkv(work, "no", server_cpu, sys.executable, [])]
        try:
            print(f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  ")
            print(f"Command: `benchmarks/zset_bench.py --sizes {options.sizes} "
                  f"--seconds {options.seconds:g} --pipeline {options.pipeline}`  ")
            print()
            print("| members | command | redis req/s | hotkv req/s | ratio |")
            print("|---:|---|---:|---:|---:|")
            filled = 0
            memory: dict[str, tuple[int, int]] = {}
            for size in sizes:
                for server in servers:
                    client = run.RawClient(server.port)
                    field = "used_memory" if server.name == "redis" else "used_memory_rss"
                    before = used_memory(client, field)
                    started = time.perf_counter()
                    fill(client, filled, size)
                    took = time.perf_counter() - started
                    grown = used_memory(client, field) - before
                    old = memory.get(server.name, (0, 0))
                    memory[server.name] = (old[0] + grown, old[1] + size - filled)
                    print(f"<!-- {server.name}: filled to {size} in {took:.1f} s -->")
                    client.close()
                filled = size
                mid = size // 2
                commands = {
                    "ZADD (new member)": ["-r", str(10 * size), "ZADD", KEY.decode(),
                                          "__rand_int__", "n:__rand_int__"],
                    f"ZRANGE {mid} {mid + 9}": ["ZRANGE", KEY.decode(), str(mid), str(mid + 9)],
                    "ZRANGEBYSCORE x +inf LIMIT 0 10": ["-r", str(size), "ZRANGEBYSCORE",
                                                        KEY.decode(), "__rand_int__", "+inf",
                                                        "LIMIT", "0", "10"],
                    "ZRANK": ["-r", str(size), "ZRANK", KEY.decode(), "m:__rand_int__"],
                }
                for title, args in commands.items():
                    rates = [rate(s, binary, args, options.pipeline, options.seconds, bench_cpu)
                             for s in servers]
                    print(f"| {size:,} | {title} | {rates[0]:,.0f} | {rates[1]:,.0f} | "
                          f"{rates[1] / rates[0]:.2f} |")
            print()
            for name, (grown, members) in memory.items():
                what = "used_memory" if name == "redis" else "RSS"
                print(f"{name}: {grown / max(members, 1):.0f} bytes per member, growth of {what} "
                      f"({grown / 1e6:.1f} MB for {members:,} members)  ")
            print(f"hotkv SortedSetValue alone (tracemalloc, {sizes[-1]:,} members): "
                  f"{structure_bytes(sizes[-1]):.0f} bytes per member  ")
        finally:
            for server in servers:
                server.stop()


if __name__ == "__main__":
    main()
