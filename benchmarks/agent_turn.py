"""The cost of an agent's whole turn: hotkv's AMEM commands against the same turn on redis-server.

    .venv/bin/python benchmarks/agent_turn.py                       # 100,000 facts x 768 dims
    .venv/bin/python benchmarks/agent_turn.py --facts 5000 --seconds 3   # a quick run
    .venv/bin/python benchmarks/agent_turn.py --json /tmp/turn.json --png benchmarks/agent_turn.png

One turn is the turn of the product's example (README, "An agent's turn"), one request
after the other as the example sends them:

| step | hotkv | redis-server 7, the way a user builds it without hotkv |
|---|---|---|
| 1. remember the question | ``AMEM.CONV.APPEND s user q`` | one pipeline: ``RPUSH conv:s json``, ``LTRIM conv:s -50 -1``, ``EXPIRE conv:s 86400`` |
| 2. the last 10 turns | ``AMEM.CONV.WINDOW s 10`` | ``LRANGE conv:s -10 -1`` and ``json.loads`` of each turn |
| 3. recall 3 facts | ``AMEM.SEM.RECALL kb 3 FP32 blob`` (HNSW in the server) | exact cosine search of the query against the client's numpy matrix of every fact vector (normalised once, at start), then one pipeline of 3 ``HGET fact:id text`` |
| 4. read a note | ``AMEM.WORK.GET s ticket`` | ``HGET work:s ticket`` |
| 5. remember the answer | ``AMEM.CONV.APPEND s assistant a`` | the pipeline of step 1 |
| 6. log what it did | ``AMEM.EPIS.LOG agent action text`` | ``XADD epis:agent * type action content text`` |
| 7. set a note | ``AMEM.WORK.SET s last_step answered`` | ``HSET work:s last_step answered`` |

The data: ``--facts`` vectors of ``--dim`` dims (drawn as in sem_bench.py: a 48-dim latent
space projected up plus noise, so that neighbours mean something), each fact with a text;
on redis a hash ``fact:<n>`` with ``text`` and the vector (``vec``, FP32 bytes), from which
a user's client would load its matrix. 10,000 sessions (``--sessions``), each created with
a window of 50, a day's idle TTL, 10 turns of history and a ``ticket`` note. The question
vectors are held-out draws of the same distribution (the embedding model's cost is left out
on both sides).

Agents: each simulated agent is its own process (forked, so the fact matrix is shared, not
copied) with its own connection (redis-py with hiredis, RESP2), doing turns back to back on
a random session of the 10,000. For each agent count (``--agents 1,10,50``) both servers
run in turn (hotkv, then redis; ``--repeat`` times), each for a warm-up of 1 s and then
``--seconds``; the table has turns/s and the p50/p99/p99.9 latency of a whole turn.

Both servers have an append-only file with ``appendfsync everysec`` (``--aof no`` turns it
off on both). numpy's BLAS is held to one thread in the agents (the server does the same
for its own), so on this 2-core machine the servers and the agents share the cores as they
would on a small host. The hotkv data (facts + sessions) is built once and kept in
``--cache`` (default ``/tmp/hotkv-agent-turn/<facts>x<dim>``), and each run starts from a
copy of it; redis is filled anew each run (pipelined, about 15 s for 100,000 facts).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: one BLAS thread per agent

import argparse
import json
import multiprocessing as mp
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sem_bench import exact_top, fact_text, make_vectors

ROOT = Path(__file__).resolve().parent.parent
KB = "support-kb"
WINDOW = 50
HISTORY = 10
TTL = 86400
READY = re.compile(r"ready to accept connections on .* port (\d+)")
QUESTION = "My invoice shows the wrong VAT number, can you fix it before the end of the month?"
ANSWER = ("I have corrected the VAT number on invoice INV-1932 and sent you the new PDF; "
          "the old one is void. Anything else I can do for you today? ") * 2


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def loadavg() -> str:
    one, five, fifteen = Path("/proc/loadavg").read_text().split()[:3]
    return f"{one} {five} {fifteen}"


# --- servers --------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def aof_args(aof: str) -> list[str]:
    return ["--appendonly", "no"] if aof == "no" else ["--appendonly", "yes",
                                                      "--appendfsync", aof]


@dataclass
class Proc:
    proc: subprocess.Popen[bytes]
    port: int

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=600)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(600)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_hotkv(directory: Path, aof: str, python: str, timeout: float = 1800) -> Proc:
    logfile = directory / "hotkv.log"
    offset = logfile.stat().st_size if logfile.exists() else 0
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("OPENBLAS_NUM_THREADS", None)  # the server caps its own BLAS (server/blas.py)
    cmd = [python, "-m", "hotkv_server", "--port", "0", "--bind", "127.0.0.1", "--dir",
           str(directory), "--logfile", str(logfile), *aof_args(aof),
           "--auto-aof-rewrite-percentage", "0"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"hotkv exited with {proc.returncode}")
        try:
            with open(logfile, "rb") as fh:
                fh.seek(offset)
                match = READY.search(fh.read().decode(errors="replace"))
        except FileNotFoundError:
            match = None
        if match:
            return Proc(proc, int(match.group(1)))
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("hotkv did not start")


def start_redis(directory: Path, aof: str, binary: str) -> Proc:
    port = free_port()
    cmd = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", *aof_args(aof),
           "--dir", str(directory), "--logfile", str(directory / "redis.log"),
           "--daemonize", "no"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if redis.Redis(port=port).ping():
                return Proc(proc, port)
        except redis.ConnectionError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("redis-server did not start")


# --- filling both servers -------------------------------------------------------------------


def history_turn(n: int) -> tuple[str, str]:
    return ("user", QUESTION) if n % 2 == 0 else ("assistant", ANSWER)


def fill_hotkv(r: redis.Redis, data: np.ndarray, sessions: int) -> float:
    started = time.monotonic()
    r.execute_command("AMEM.SEM.CREATE", KB, data.shape[1])
    for start in range(0, len(data), 200):
        p = r.pipeline(transaction=False)
        for n in range(start, min(len(data), start + 200)):
            p.execute_command("AMEM.SEM.STORE", KB, f"f{n}", fact_text(n), "FP32",
                              data[n].astype("<f4").tobytes())
        p.execute()
        if start % 20_000 == 0 and start:
            log(f"  hotkv: {start:,} facts, {time.monotonic() - started:.0f} s")
    for start in range(0, sessions, 100):
        p = r.pipeline(transaction=False)
        for s in range(start, min(sessions, start + 100)):
            p.execute_command("AMEM.CONV.CREATE", f"s{s}", "WINDOW", WINDOW, "TTL", TTL)
            for n in range(HISTORY):
                p.execute_command("AMEM.CONV.APPEND", f"s{s}", *history_turn(n))
            p.execute_command("AMEM.WORK.SET", f"s{s}", "ticket", f"INV-{s}")
        p.execute()
    return time.monotonic() - started


def turn_json(role: str, content: str) -> str:
    return json.dumps({"role": role, "content": content, "ts": int(time.time() * 1000)})


def fill_redis(r: redis.Redis, data: np.ndarray, sessions: int) -> float:
    started = time.monotonic()
    for start in range(0, len(data), 500):
        p = r.pipeline(transaction=False)
        for n in range(start, min(len(data), start + 500)):
            p.hset(f"fact:{n}", mapping={"text": fact_text(n),
                                         "vec": data[n].astype("<f4").tobytes()})
        p.execute()
    for start in range(0, sessions, 100):
        p = r.pipeline(transaction=False)
        for s in range(start, min(sessions, start + 100)):
            p.rpush(f"conv:s{s}", *[turn_json(*history_turn(n)) for n in range(HISTORY)])
            p.expire(f"conv:s{s}", TTL)
            p.hset(f"work:s{s}", "ticket", f"INV-{s}")
        p.execute()
    return time.monotonic() - started


# --- the turns ------------------------------------------------------------------------------

#: set in the parent before the agents fork: the client's fact matrix (normalised rows) for
#: the redis turn, and the query vectors
MATRIX: np.ndarray | None = None
QUERIES: np.ndarray | None = None


def hotkv_turn(r: redis.Redis, session: str, agent: str, blob: bytes, q: np.ndarray) -> int:
    r.execute_command("AMEM.CONV.APPEND", session, "user", QUESTION)
    turns = r.execute_command("AMEM.CONV.WINDOW", session, 10)
    facts = r.execute_command("AMEM.SEM.RECALL", KB, 3, "FP32", blob)
    ticket = r.execute_command("AMEM.WORK.GET", session, "ticket")
    r.execute_command("AMEM.CONV.APPEND", session, "assistant", ANSWER)
    r.execute_command("AMEM.EPIS.LOG", agent, "action",
                      f"answered {ticket!r} with {len(facts)} facts after {len(turns)} turns")
    r.execute_command("AMEM.WORK.SET", session, "last_step", "answered")
    return len(facts)


def _append_turn(r: redis.Redis, key: str, role: str, content: str) -> None:
    p = r.pipeline(transaction=False)
    p.rpush(key, turn_json(role, content))
    p.ltrim(key, -WINDOW, -1)
    p.expire(key, TTL)
    p.execute()


def redis_turn(r: redis.Redis, session: str, agent: str, blob: bytes, q: np.ndarray) -> int:
    assert MATRIX is not None
    conv, work = f"conv:{session}", f"work:{session}"
    _append_turn(r, conv, "user", QUESTION)
    turns = [json.loads(t) for t in r.lrange(conv, -10, -1)]
    sims = MATRIX @ (q / np.linalg.norm(q))
    top = np.argpartition(-sims, 2)[:3]
    top = top[np.argsort(-sims[top])]
    p = r.pipeline(transaction=False)
    for n in top:
        p.hget(f"fact:{int(n)}", "text")
    facts = [(text, float(sims[n])) for text, n in zip(p.execute(), top, strict=True)]
    ticket = r.hget(work, "ticket")
    _append_turn(r, conv, "assistant", ANSWER)
    r.xadd(f"epis:{agent}", {"type": "action", "content":
                             f"answered {ticket!r} with {len(facts)} facts after {len(turns)} turns"})
    r.hset(work, "last_step", "answered")
    return len(facts)


TURNS: dict[str, Callable[[redis.Redis, str, str, bytes, np.ndarray], int]] = {
    "hotkv": hotkv_turn, "redis": redis_turn}


def agent_loop(kind: str, index: int, port: int, sessions: int, start_at: float,
               measure_at: float, stop_at: float, out: Any) -> None:
    """One simulated agent: turns back to back until ``stop_at``; the latencies (seconds) of
    the turns begun after ``measure_at`` go to ``out`` (a pipe) as one float64 array."""
    assert QUERIES is not None
    turn = TURNS[kind]
    rng = np.random.default_rng(1000 + index)
    r = redis.Redis(port=port, socket_timeout=600)
    r.ping()
    agent = f"agent-{index}"
    blobs = [q.astype("<f4").tobytes() for q in QUERIES]
    latencies: list[float] = []
    while time.time() < start_at:
        time.sleep(0.001)
    now = time.perf_counter
    while True:
        wall = time.time()
        if wall >= stop_at:
            break
        i = int(rng.integers(len(blobs)))
        began = now()
        turn(r, f"s{int(rng.integers(sessions))}", agent, blobs[i], QUERIES[i])
        if wall >= measure_at:
            latencies.append(now() - began)
    out.send_bytes(np.asarray(latencies, dtype=np.float64).tobytes())
    out.close()


def run_level(kind: str, port: int, agents: int, sessions: int, seconds: float,
              warmup: float = 1.0) -> dict[str, Any]:
    ctx = mp.get_context("fork")
    start_at = time.time() + 0.5 + 0.02 * agents  # every agent forked and connected first
    measure_at = start_at + warmup
    stop_at = measure_at + seconds
    pipes, procs = [], []
    for i in range(agents):
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=agent_loop, args=(kind, i, port, sessions, start_at,
                                                     measure_at, stop_at, send))
        proc.start()
        send.close()
        pipes.append(recv)
        procs.append(proc)
    parts = [np.frombuffer(p.recv_bytes(), dtype=np.float64) for p in pipes]
    for proc in procs:
        proc.join()
    lat = np.concatenate(parts) * 1000.0
    # turns begun in the window; the last ones end up to one turn after stop_at
    return {"server": kind, "agents": agents, "turns": len(lat), "seconds": seconds,
            "turns_per_s": len(lat) / seconds,
            "p50_ms": float(np.percentile(lat, 50)), "p99_ms": float(np.percentile(lat, 99)),
            "p999_ms": float(np.percentile(lat, 99.9)), "max_ms": float(lat.max()),
            "load": loadavg()}


# --- checks ---------------------------------------------------------------------------------


def recall_check(r: redis.Redis, data: np.ndarray, queries: np.ndarray) -> float:
    """recall@3 of hotkv's RECALL against exact search (the redis turn is exact)."""
    sample = queries[:200]
    truth = exact_top(data, sample, 3)
    found = []
    for q in sample:
        hits = r.execute_command("AMEM.SEM.RECALL", KB, 3, "FP32", q.astype("<f4").tobytes())
        ids = []
        for hit in hits:
            fields = dict(zip(hit[::2], hit[1::2], strict=True)) if isinstance(hit, list) else hit
            ids.append(int(fields[b"id"].decode()[1:]))
        found.append(ids)
    return float(np.mean([len(set(f) & set(t.tolist())) / 3
                          for f, t in zip(found, truth, strict=True)]))


# --- main -----------------------------------------------------------------------------------


def build_hotkv(cache: Path, data: np.ndarray, sessions: int, python: str,
                rebuild: bool) -> dict[str, Any]:
    meta_path = cache / "build.json"
    if meta_path.exists() and not rebuild:
        return dict(json.loads(meta_path.read_text()))
    shutil.rmtree(cache, ignore_errors=True)
    (cache / "data").mkdir(parents=True)
    server = start_hotkv(cache / "data", "everysec", python)
    try:
        log(f"building the hotkv data: {len(data):,} facts x {data.shape[1]}, "
            f"{sessions:,} sessions")
        seconds = fill_hotkv(server.client(), data, sessions)
        r = server.client()
        r.execute_command("BGREWRITEAOF")
        while True:  # a base snapshot, so that each run starts by loading it
            info = r.info("persistence")
            if not info.get("aof_rewrite_in_progress") and not info.get(
                    "aof_rewrite_scheduled"):
                break
            time.sleep(0.2)
    finally:
        server.stop()
    meta = {"fill_s": seconds, "facts": len(data), "dim": int(data.shape[1]),
            "sessions": sessions}
    meta_path.write_text(json.dumps(meta))
    return meta


def plot(rows: Sequence[dict[str, Any]], path: Path, facts: int, dim: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for kind, label, style in (("hotkv", "hotkv (AMEM.*)", "o-"),
                               ("redis", "redis-server 7 + numpy in the client", "s--")):
        mine = [r for r in rows if r["server"] == kind]
        agents = sorted({r["agents"] for r in mine})
        tps = [statistics.median(r["turns_per_s"] for r in mine if r["agents"] == a)
               for a in agents]
        p99 = [statistics.median(r["p99_ms"] for r in mine if r["agents"] == a) for a in agents]
        left.plot(agents, tps, style, label=label)
        right.plot(agents, p99, style, label=label)
    for ax, title, unit in ((left, "whole turns per second", "turns/s"),
                            (right, "p99 latency of a turn", "ms")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ticks = sorted({r["agents"] for r in rows})
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.set_xlabel("concurrent agents")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle(f"agent turn (7 steps, recall 3 of {facts:,} x {dim} facts), 2-core machine")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def table(rows: Sequence[dict[str, Any]]) -> str:
    out = ["| agents | server | turns | turns/s | p50 ms | p99 ms | p99.9 ms | max ms | load |",
           "|---:|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in sorted(rows, key=lambda r: (r["agents"], r["server"])):
        out.append(f"| {r['agents']} | {r['server']} | {r['turns']:,} | {r['turns_per_s']:,.1f}"
                   f" | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['p999_ms']:.2f} | "
                   f"{r['max_ms']:.1f} | {r['load']} |")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    global MATRIX, QUERIES
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--agents", default="1,10,50")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--aof", default="everysec", choices=["no", "everysec", "always"])
    parser.add_argument("--servers", default="hotkv,redis")
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--redis-server", default=shutil.which("redis-server")
                        or "/usr/bin/redis-server")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--png", type=Path)
    args = parser.parse_args(argv)
    agent_counts = [int(a) for a in args.agents.split(",")]
    servers = args.servers.split(",")
    cache = args.cache or Path(f"/tmp/hotkv-agent-turn/{args.facts}x{args.dim}x{args.sessions}")

    log(f"load average before: {loadavg()}")
    data, queries = make_vectors(args.facts, 1000, args.dim)
    QUERIES = queries
    result: dict[str, Any] = {"facts": args.facts, "dim": args.dim, "sessions": args.sessions,
                              "aof": args.aof, "seconds": args.seconds,
                              "load_before": loadavg(), "rows": []}
    if "hotkv" in servers:
        result["hotkv_build"] = build_hotkv(cache, data, args.sessions, args.python,
                                            args.rebuild)
    work = Path(tempfile.mkdtemp(prefix="hotkv-agent-turn-"))
    procs: dict[str, Proc] = {}
    try:
        if "hotkv" in servers:
            shutil.copytree(cache / "data", work / "hotkv")
            started = time.monotonic()
            procs["hotkv"] = start_hotkv(work / "hotkv", args.aof, args.python)
            result["hotkv_load_s"] = time.monotonic() - started
            result["hotkv_recall_at_3"] = recall_check(procs["hotkv"].client(), data, queries)
            log(f"hotkv loaded in {result['hotkv_load_s']:.1f} s; recall@3 vs exact "
                f"{result['hotkv_recall_at_3']:.3f}")
        if "redis" in servers:
            (work / "redis").mkdir()
            procs["redis"] = start_redis(work / "redis", args.aof, args.redis_server)
            result["redis_fill_s"] = fill_redis(procs["redis"].client(), data, args.sessions)
            log(f"redis filled in {result['redis_fill_s']:.1f} s")
            started = time.monotonic()
            MATRIX = data / np.linalg.norm(data, axis=1, keepdims=True)  # the client's copy
            result["client_matrix_s"] = time.monotonic() - started
        for agents in agent_counts:
            for _ in range(args.repeat):
                for kind in servers:
                    row = run_level(kind, procs[kind].port, agents, args.sessions, args.seconds)
                    log(f"{kind:5} {agents:3} agents: {row['turns_per_s']:8.1f} turns/s, "
                        f"p50 {row['p50_ms']:.2f} ms, p99 {row['p99_ms']:.2f} ms, "
                        f"p99.9 {row['p999_ms']:.2f} ms (load {row['load']})")
                    result["rows"].append(row)
        for kind, proc in procs.items():
            result[f"{kind}_used_memory"] = proc.client().info("memory")["used_memory"]
    finally:
        for proc in procs.values():
            proc.stop()
        shutil.rmtree(work, ignore_errors=True)
    result["load_after"] = loadavg()
    print(f"load average before {result['load_before']}, after {result['load_after']}")
    print(table(result["rows"]))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    if args.png:
        plot(result["rows"], args.png, args.facts, args.dim)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
