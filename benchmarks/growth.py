"""Growth: memory per object, restart and rewrite at 1M objects, recall latency as facts grow.

    .venv/bin/python benchmarks/growth.py                        # every part
    .venv/bin/python benchmarks/growth.py --parts memory --scale 0.1   # a quick run
    .venv/bin/python benchmarks/growth.py --parts restart,rewrite --objects 1000000
    .venv/bin/python benchmarks/growth.py --parts recall --recall-sizes 10000,100000,1000000 --recall-dim 96

Parts (``--parts``, comma-separated):

* ``memory``: for each Redis type and each memory type, a fresh hotkv and a fresh
  redis-server get the same data (hotkv's memory types against what a user would build on
  Redis: a list of JSON turns for a conversation, a hash for notes, a stream for the event
  log, a hash with text and FP32 vector per fact, a string per summary). Per object and per
  stored byte (the raw bytes of ids, fields and values, as the client sent them): redis's
  growth of ``used_memory`` (the allocator's count), its RSS growth, and hotkv's RSS growth
  (hotkv's ``used_memory`` is its RSS; Python objects have no allocator count of their
  own). Targets: hotkv at most 2x redis's ``used_memory`` for strings and hashes, facts at
  most 1.3x their raw bytes.
* ``restart``: ``--objects`` objects (a mix: 60% strings, 20% hash fields in hashes of 10,
  10% conversation turns in sessions of 25, 10% notes in scratchpads of 10) on both
  servers, a rewrite (BGREWRITEAOF: a base snapshot), then another 10% of writes into the
  AOF after it; then a restart: spawn to ready, and spawn to the first PONG for redis.
* ``rewrite``: on the same data, BGREWRITEAOF while one client PINGs back to back: the
  longest PING round trip from the command until the rewrite has finished, against the
  longest over the same time without a rewrite (the noise floor of the machine). Target:
  the stall under 50 ms.
* ``recall``: AMEM.SEM.RECALL k=10 latency (sequential, one client: p50, p99) at each of
  ``--recall-sizes`` facts of ``--recall-dim`` dims, with recall@10 against exact search.
  1M facts of 768 dims (3 GB of vectors, about an hour of HNSW inserts at the default
  EF_CONSTRUCTION here) do not fit a session, so the default is 96 dims at EF_CONSTRUCTION
  64 for every size (one curve, so the growth with the size shows).

Every result line carries the load average (``/proc/loadavg``): the machine is shared.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent_turn import Proc, loadavg, start_hotkv, start_redis
from sem_bench import exact_top, make_vectors

Write = tuple[Any, ...]  # one command's argv


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def rss(proc: Proc) -> int:
    for line in Path(f"/proc/{proc.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def send(r: redis.Redis, commands: Iterator[Write], batch: int = 1000) -> int:
    """Send every command pipelined; returns how many were sent."""
    count = 0
    p = r.pipeline(transaction=False)
    for argv in commands:
        p.execute_command(*argv)
        count += 1
        if count % batch == 0:
            p.execute()
            p = r.pipeline(transaction=False)
    p.execute()
    return count


# --- the data sets --------------------------------------------------------------------------

VALUE32 = b"v" * 24 + b"01234567"
TURN = ("I have corrected the VAT number on the invoice and sent you the new PDF; "
        "the old one is void.")


def turn_json(role: str, content: str, n: int) -> str:
    return json.dumps({"role": role, "content": content, "ts": 1764590000000 + n})


class DataSet:
    """One kind of data: the writes for hotkv and for redis, the objects and raw bytes."""

    def __init__(self, name: str, unit: str, count: int, raw: int,
                 hotkv: Callable[[], Iterator[Write]], redis_: Callable[[], Iterator[Write]],
                 setup: Sequence[Write] = ()) -> None:
        self.name, self.unit, self.count, self.raw = name, unit, count, raw
        self.hotkv, self.redis, self.setup = hotkv, redis_, setup


def datasets(scale: float, dim: int) -> list[DataSet]:
    out: list[DataSet] = []

    n = int(200_000 * scale)
    out.append(DataSet(
        "string (SET)", "key", n, n * (12 + 32),
        lambda: (("SET", f"key:{i:08d}", VALUE32) for i in range(n)),
        lambda: (("SET", f"key:{i:08d}", VALUE32) for i in range(n))))

    keys = int(20_000 * scale)
    small = keys * 10

    def small_hash() -> Iterator[Write]:
        return (("HSET", f"h:{k:07d}", f"field:{f:02d}", VALUE32)
                for k in range(keys) for f in range(10))
    out.append(DataSet("hash, 10 fields (listpack in redis)", "field", small,
                       keys * (9 + 10 * (8 + 32)), small_hash, small_hash))

    big = int(200_000 * scale)

    def big_hash() -> Iterator[Write]:
        return (("HSET", "bighash", f"field:{f:08d}", VALUE32) for f in range(big))
    out.append(DataSet("hash, one of many fields (hashtable)", "field", big,
                       big * (14 + 32), big_hash, big_hash))

    lists = int(2_000 * scale)

    def list_() -> Iterator[Write]:
        return (("RPUSH", f"l:{k:06d}", *[VALUE32] * 100) for k in range(lists))
    out.append(DataSet("list, 100 items", "item", lists * 100, lists * (8 + 100 * 32),
                       list_, list_))

    def set_() -> Iterator[Write]:
        return (("SADD", f"s:{k:06d}", *[f"member:{m:08d}" for m in range(100)])
                for k in range(lists))
    out.append(DataSet("set, 100 members", "member", lists * 100, lists * (8 + 100 * 15),
                       set_, set_))

    def zset() -> Iterator[Write]:
        for k in range(lists):
            pairs: list[Any] = []
            for m in range(100):
                pairs += [m, f"member:{m:08d}"]
            yield ("ZADD", f"z:{k:06d}", *pairs)
    out.append(DataSet("sorted set, 100 members", "member", lists * 100,
                       lists * (8 + 100 * (15 + 8)), zset, zset))

    # memory types against what a user builds on Redis for the same data
    sessions = int(2_000 * scale)

    def conv_hotkv() -> Iterator[Write]:
        for s in range(sessions):
            yield ("AMEM.CONV.CREATE", f"s{s:06d}", "WINDOW", 50)
            for t in range(50):
                yield ("AMEM.CONV.APPEND", f"s{s:06d}", "user" if t % 2 == 0 else "assistant",
                       TURN)

    def conv_redis() -> Iterator[Write]:
        for s in range(sessions):
            yield ("RPUSH", f"conv:s{s:06d}",
                   *[turn_json("user" if t % 2 == 0 else "assistant", TURN, t)
                     for t in range(50)])
    out.append(DataSet("AMEM.CONV turns (redis: list of JSON turns)", "turn", sessions * 50,
                       sessions * (7 + 50 * (len(TURN) + 6)), conv_hotkv, conv_redis))

    def work_hotkv() -> Iterator[Write]:
        return (("AMEM.WORK.SET", f"s{k:07d}", f"note:{f:02d}", VALUE32)
                for k in range(keys) for f in range(10))

    def work_redis() -> Iterator[Write]:
        return (("HSET", f"work:s{k:07d}", f"note:{f:02d}", VALUE32)
                for k in range(keys) for f in range(10))
    out.append(DataSet("AMEM.WORK notes (redis: hash per session)", "note", small,
                       keys * (8 + 10 * (7 + 32)), work_hotkv, work_redis))

    agents = max(1, int(200 * scale))
    text = "called refund tool for order 1932; amount 42.00 EUR; customer informed"

    def epis_hotkv() -> Iterator[Write]:
        return (("AMEM.EPIS.LOG", f"agent-{a:04d}", "action", text)
                for a in range(agents) for _ in range(1000))

    def epis_redis() -> Iterator[Write]:
        return (("XADD", f"epis:agent-{a:04d}", "*", "type", "action", "content", text)
                for a in range(agents) for _ in range(1000))
    out.append(DataSet("AMEM.EPIS events (redis: stream)", "event", agents * 1000,
                       agents * (10 + 1000 * (6 + len(text))), epis_hotkv, epis_redis))

    facts = int(20_000 * scale)
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((facts, dim)).astype("<f4")
    fact_text = "The customer's VAT number is stored on the billing profile, field 7."

    def sem_hotkv() -> Iterator[Write]:
        return (("AMEM.SEM.STORE", "kb", f"fact:{i:07d}", fact_text, "FP32",
                 vectors[i].tobytes()) for i in range(facts))

    def sem_redis() -> Iterator[Write]:
        return (("HSET", f"fact:{i:07d}", "text", fact_text, "vec", vectors[i].tobytes())
                for i in range(facts))
    out.append(DataSet(f"AMEM.SEM facts, {dim} dims (redis: hash of text + FP32 vector)",
                       "fact", facts, facts * (12 + len(fact_text) + 4 * dim),
                       sem_hotkv, sem_redis,
                       setup=[("AMEM.SEM.CREATE", "kb", dim, "EF_CONSTRUCTION", 64)]))

    summaries = int(10_000 * scale)
    summary = "The customer asked about the VAT number; " * 12

    def summary_hotkv() -> Iterator[Write]:
        return (("AMEM.SUMMARY.SET", f"agent-{a:06d}", summary) for a in range(summaries))

    def summary_redis() -> Iterator[Write]:
        return (("SET", f"summary:agent-{a:06d}", summary) for a in range(summaries))
    out.append(DataSet("AMEM.SUMMARY texts (redis: string)", "summary", summaries,
                       summaries * (12 + len(summary)), summary_hotkv, summary_redis))
    return out


def measure_memory(scale: float, dim: int, python: str, redis_bin: str,
                   only: str | None) -> list[dict[str, Any]]:
    rows = []
    for ds in datasets(scale, dim):
        if only and only not in ds.name:
            continue
        work = Path(tempfile.mkdtemp(prefix="hotkv-growth-"))
        try:
            (work / "h").mkdir()
            (work / "r").mkdir()
            hot = start_hotkv(work / "h", "no", python)
            red = start_redis(work / "r", "no", redis_bin)
            try:
                hr, rr = hot.client(), red.client()
                for argv in ds.setup:
                    hr.execute_command(*argv)
                time.sleep(0.3)
                h0, r0, rr0 = rss(hot), rr.info("memory")["used_memory"], rss(red)
                started = time.monotonic()
                send(hr, ds.hotkv(), batch=200 if "SEM" in ds.name else 1000)
                hot_s = time.monotonic() - started
                send(rr, ds.redis())
                time.sleep(0.3)
                h1, r1, rr1 = rss(hot), rr.info("memory")["used_memory"], rss(red)
            finally:
                hot.stop()
                red.stop()
        finally:
            shutil.rmtree(work, ignore_errors=True)
        row = {"data": ds.name, "unit": ds.unit, "objects": ds.count,
               "raw_per_object": ds.raw / ds.count,
               "redis_used_per_object": (r1 - r0) / ds.count,
               "redis_rss_per_object": (rr1 - rr0) / ds.count,
               "hotkv_rss_per_object": (h1 - h0) / ds.count,
               "hotkv_fill_s": hot_s, "load": loadavg()}
        row["hotkv_vs_redis_used"] = row["hotkv_rss_per_object"] / row["redis_used_per_object"]
        row["hotkv_vs_raw"] = row["hotkv_rss_per_object"] / row["raw_per_object"]
        row["redis_vs_raw"] = row["redis_used_per_object"] / row["raw_per_object"]
        log(f"{ds.name}: {ds.count:,} x; raw {row['raw_per_object']:.0f} B, redis "
            f"{row['redis_used_per_object']:.0f} B, hotkv {row['hotkv_rss_per_object']:.0f} B "
            f"({row['hotkv_vs_redis_used']:.2f}x redis, {row['hotkv_vs_raw']:.2f}x raw)")
        rows.append(row)
    return rows


# --- 1M objects: restart and rewrite --------------------------------------------------------


def mixed(objects: int, offset: int = 0) -> Iterator[Write]:
    """``objects`` writes: 60% strings, 20% hash fields, 10% turns, 10% notes."""
    strings, fields, turns, notes = (int(objects * f) for f in (0.6, 0.2, 0.1, 0.1))
    for i in range(strings):
        yield ("SET", f"key:{offset + i:09d}", VALUE32)
    for i in range(fields):
        yield ("HSET", f"h:{(offset + i) // 10:08d}", f"field:{i % 10}", VALUE32)
    for i in range(turns):
        if i == 0 or (offset + i) % 25 == 0:
            yield ("AMEM.CONV.CREATE", f"s{(offset + i) // 25:07d}", "WINDOW", 50)
        yield ("AMEM.CONV.APPEND", f"s{(offset + i) // 25:07d}", "user", TURN)
    for i in range(notes):
        yield ("AMEM.WORK.SET", f"w{(offset + i) // 10:07d}", f"note:{i % 10}", VALUE32)


def mixed_redis(objects: int, offset: int = 0) -> Iterator[Write]:
    for argv in mixed(objects, offset):
        if argv[0] == "AMEM.CONV.CREATE":
            continue
        if argv[0] == "AMEM.CONV.APPEND":
            yield ("RPUSH", f"conv:{argv[1]}", turn_json(argv[2], argv[3], 0))
        elif argv[0] == "AMEM.WORK.SET":
            yield ("HSET", f"work:{argv[1]}", argv[2], argv[3])
        else:
            yield argv


def rewriting(r: redis.Redis) -> bool:
    info = r.info("persistence")
    return bool(info.get("aof_rewrite_in_progress") or info.get("aof_rewrite_scheduled"))


def done_rewriting(r: redis.Redis) -> bool:
    return not rewriting(r)


def wait_rewrite(r: redis.Redis) -> None:
    while rewriting(r):
        time.sleep(0.05)


def ping_stall(r: redis.Redis, action: Callable[[], Any] | None, seconds: float,
               until: Callable[[], bool]) -> tuple[float, int, list[tuple[float, float]]]:
    """The longest PING round trip (ms) while ``action`` runs and until ``until()`` or
    ``seconds`` pass (a second connection polls ``until``); the pings' count; and the five
    longest as (ms since the action, ms), to tell a stall at the fork or the install from
    CPU contention with the child."""
    stop = threading.Event()
    times: list[tuple[float, float]] = []

    def pinger() -> None:
        c = redis.Redis(port=r.connection_pool.connection_kwargs["port"], socket_timeout=60)
        c.ping()
        while not stop.is_set():
            began = time.perf_counter()
            c.ping()
            times.append((began, time.perf_counter() - began))

    thread = threading.Thread(target=pinger)
    thread.start()
    time.sleep(0.2)
    origin = time.perf_counter()
    times.clear()
    if action is not None:
        action()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not until():
        time.sleep(0.01)
    stop.set()
    thread.join()
    worst = sorted(times, key=lambda t: -t[1])[:5]
    top = [(round((t - origin) * 1000, 1), round(d * 1000, 1)) for t, d in worst]
    return (worst[0][1] * 1000 if worst else 0.0), len(times), top


def rewrite_steps(log_text: str) -> dict[str, float | None]:
    """The last rewrite's fork time on the loop and its install time (off the loop), from
    the server's log lines (None when the server does not log them)."""
    fork = re.findall(r"rewriting started by pid \d+ \(fork ([\d.]+) ms, after ([\d.]+) ms"
                      r"(?:[^;)]*; the new increment and its manifest took ([\d.]+) ms off)?",
                      log_text)
    install = re.findall(r"installed off the loop in ([\d.]+) ms", log_text)
    return {"hotkv_fork_ms": float(fork[-1][0]) if fork else None,
            # on the loop before the fork: the file work (older servers), or only the old
            # increment's write-out when the file work ran on a thread (then the next key)
            "hotkv_start_files_ms": float(fork[-1][1]) if fork else None,
            "hotkv_start_off_loop_ms": float(fork[-1][2]) if fork and fork[-1][2] else None,
            "hotkv_install_ms": float(install[-1]) if install else None}


def restart_and_rewrite(objects: int, python: str, redis_bin: str,
                        kinds: Sequence[str] = ("hotkv", "redis")) -> dict[str, Any]:
    out: dict[str, Any] = {"objects": objects, "load_before": loadavg()}
    work = Path(tempfile.mkdtemp(prefix="hotkv-growth-big-"))
    try:
        for kind in kinds:
            d = work / kind
            d.mkdir()
            proc = (start_hotkv(d, "everysec", python) if kind == "hotkv"
                    else start_redis(d, "everysec", redis_bin))
            try:
                r = proc.client()
                started = time.monotonic()
                if kind == "hotkv":
                    send(r, mixed(objects))
                else:
                    send(r, mixed_redis(objects))
                out[f"{kind}_fill_s"] = time.monotonic() - started
                out[f"{kind}_rss_mb"] = rss(proc) / 1e6
                wait_rewrite(r)
                floor, _, _ = ping_stall(r, None, 3.0, lambda: False)
                began = time.monotonic()
                stall, pings, worst = ping_stall(r, functools.partial(r.execute_command, "BGREWRITEAOF"),
                                          600, functools.partial(done_rewriting, r))
                out[f"{kind}_rewrite_s"] = time.monotonic() - began
                out[f"{kind}_rewrite_ping_stall_ms"] = stall
                out[f"{kind}_rewrite_pings"] = pings
                out[f"{kind}_rewrite_worst_pings"] = worst
                out[f"{kind}_ping_floor_ms"] = floor
                out[f"{kind}_rewrite_load"] = loadavg()
                if kind == "hotkv":  # the server's own account of the steps on its loop
                    out.update(rewrite_steps((d / "hotkv.log").read_text(errors="replace")))
                log(f"{kind}: filled {objects:,} in {out[f'{kind}_fill_s']:.1f} s; rewrite "
                    f"{out[f'{kind}_rewrite_s']:.2f} s, longest PING {stall:.1f} ms "
                    f"({pings:,} pings; without a rewrite {floor:.1f} ms) load {loadavg()}; "
                    f"worst (ms after BGREWRITEAOF, ms): {worst}"
                    + (f"; on the loop: before the fork {out['hotkv_start_files_ms']} ms, "
                       f"fork {out['hotkv_fork_ms']} ms; off the loop: new increment and "
                       f"manifest {out['hotkv_start_off_loop_ms']} ms, "
                       f"install {out['hotkv_install_ms']} ms"
                       if kind == "hotkv" else ""))
                extra = int(objects * 0.1)
                send(r, (mixed if kind == "hotkv" else mixed_redis)(extra, offset=objects))
                time.sleep(1.2)  # everysec: the tail on disk
            finally:
                proc.stop()
            aof_dir = d / "appendonlydir"
            out[f"{kind}_aof_mb"] = sum(f.stat().st_size for f in aof_dir.iterdir()) / 1e6
            started = time.monotonic()
            proc = (start_hotkv(d, "everysec", python) if kind == "hotkv"
                    else start_redis(d, "everysec", redis_bin))
            try:
                r = proc.client()
                while True:  # redis answers PING while it loads: wait for the data
                    try:
                        if r.dbsize() > 0 and not r.info("persistence").get("loading"):
                            break
                    except redis.BusyLoadingError:
                        pass
                    time.sleep(0.01)
                out[f"{kind}_restart_s"] = time.monotonic() - started
                out[f"{kind}_dbsize_after"] = r.dbsize()
            finally:
                proc.stop()
            log(f"{kind}: restart from base + AOF ({out[f'{kind}_aof_mb']:.0f} MB) in "
                f"{out[f'{kind}_restart_s']:.2f} s, dbsize {out[f'{kind}_dbsize_after']:,}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out["load_after"] = loadavg()
    return out


# --- recall latency as the facts grow -------------------------------------------------------


def hit_id(hit: Any) -> bytes:
    fields = hit if isinstance(hit, dict) else dict(zip(hit[::2], hit[1::2], strict=True))
    return bytes(fields[b"id"])


def recall_growth(sizes: Sequence[int], dim: int, python: str) -> list[dict[str, Any]]:
    rows = []
    biggest = max(sizes)
    data, queries = make_vectors(biggest, 300, dim)
    work = Path(tempfile.mkdtemp(prefix="hotkv-growth-recall-"))
    try:
        proc = start_hotkv(work, "no", python)
        try:
            r = proc.client()
            r.execute_command("AMEM.SEM.CREATE", "kb", dim, "EF_CONSTRUCTION", 64)
            stored = 0
            started = time.monotonic()
            for size in sorted(sizes):
                send(r, (("AMEM.SEM.STORE", "kb", f"f{i}", f"fact {i}", "FP32",
                          data[i].astype("<f4").tobytes()) for i in range(stored, size)),
                     batch=500)
                stored = size
                fill = time.monotonic() - started
                blobs = [q.astype("<f4").tobytes() for q in queries]
                for b in blobs[:20]:
                    r.execute_command("AMEM.SEM.RECALL", "kb", 10, "FP32", b)
                lat, found = [], []
                for b in blobs:
                    began = time.perf_counter()
                    hits = r.execute_command("AMEM.SEM.RECALL", "kb", 10, "FP32", b)
                    lat.append((time.perf_counter() - began) * 1000)
                    found.append([int(hit_id(h)[1:]) for h in hits])
                truth = exact_top(data[:size], queries, 10)
                recall = float(np.mean([len(set(f) & set(t.tolist())) / 10
                                        for f, t in zip(found, truth, strict=True)]))
                row = {"facts": size, "dim": dim, "p50_ms": statistics.median(lat),
                       "p99_ms": float(np.percentile(lat, 99)), "recall_at_10": recall,
                       "stored_after_s": fill, "rss_mb": rss(proc) / 1e6, "load": loadavg()}
                log(f"recall at {size:,} x {dim}: p50 {row['p50_ms']:.2f} ms, p99 "
                    f"{row['p99_ms']:.2f} ms, recall@10 {recall:.3f} (stored in {fill:.0f} s, "
                    f"load {row['load']})")
                rows.append(row)
        finally:
            proc.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--parts", default="memory,restart,recall")
    parser.add_argument("--scale", type=float, default=1.0, help="of the memory data sets")
    parser.add_argument("--only", help="memory: only the data sets whose name has this")
    parser.add_argument("--dim", type=int, default=768, help="memory: dims of the facts")
    parser.add_argument("--objects", type=int, default=1_000_000)
    parser.add_argument("--recall-sizes", default="10000,100000,1000000")
    parser.add_argument("--recall-dim", type=int, default=96)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--redis-server", default=shutil.which("redis-server")
                        or "/usr/bin/redis-server")
    parser.add_argument("--servers", default="hotkv,redis", help="restart/rewrite: which")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    parts = args.parts.split(",")
    result: dict[str, Any] = {"load_before": loadavg()}
    if "memory" in parts:
        result["memory"] = measure_memory(args.scale, args.dim, args.python, args.redis_server,
                                          args.only)
    if "restart" in parts or "rewrite" in parts:
        result["big"] = restart_and_rewrite(args.objects, args.python, args.redis_server,
                                            args.servers.split(","))
    if "recall" in parts:
        result["recall"] = recall_growth([int(s) for s in args.recall_sizes.split(",")],
                                         args.recall_dim, args.python)
    result["load_after"] = loadavg()
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
