"""Semantic recall benchmark: AMEM.SEM.RECALL against hnswlib in process, at the same breadth.

    .venv/bin/python benchmarks/sem_bench.py                 # 100,000 facts x 768 dims
    .venv/bin/python benchmarks/sem_bench.py --facts 10000   # while iterating
    .venv/bin/python benchmarks/sem_bench.py --rebuild       # build the data set again

What it measures (``run.py --rows sem`` runs the same and adds the rows to its table):

* queries/s of sequential ``AMEM.SEM.RECALL ns 10 FP32 <blob> [EF e]`` (redis-py, one
  client, one request at a time) against ``hnswlib.Index.knn_query`` in this process (one
  query per call, one thread) on an index built from the same vectors with the same M and
  EF_CONSTRUCTION, and recall@10 of both against exact (numpy) search;
* the same over several EF values: the recall-vs-queries/s curve (PNG). The server widens
  a search to ``max(EF, k, min(32 k, 1024))`` (``search_breadth`` in
  ``hotkv_server.stores.sem``), so with k = 10 every EF below 320 searches at 320; each server
  point is compared with hnswlib at that effective breadth, not at the nominal EF;
* queries/s of 8 clients against 1 client, measured the same way: client processes, each
  its own connection and one RECALL at a time, sending prebuilt request bytes and reading
  replies with hiredis' C parser (``clients_rate``), so that the clients' own CPU on this
  2-core machine is small (redis-py threads of one process, the earlier way, are kept as
  ``--client-threads`` for comparison);
* memory per fact: the RSS growth of a fresh server (not the cached one) while every fact
  is stored into it, over the raw bytes (4 x dim for the vector + the text). It is measured
  in every run, so store changes show without rebuilding the cache; the namespace uses
  EF_CONSTRUCTION 16 to take ~40 s instead of ~6 min: hnswlib's memory per element is
  fixed by M and dim, not by EF_CONSTRUCTION (30,000 facts: 4,120 vs 4,121 B/fact at 16
  and 200). The build's own RSS growth (EF_CONSTRUCTION 200) is reported beside it;
* restart: spawn-to-ready time of a server loading the base snapshot (written by
  BGREWRITEAOF) against the time it took to store the facts in the first place.

The data: ``--facts`` vectors of ``--dim`` values drawn from a 48-dimensional latent space
(a fixed random projection to ``--dim`` plus isotropic noise), so that nearest neighbours
mean something, as with real embeddings; uniformly random vectors in 768 dimensions have
no structure for any index to find. The queries are held-out draws from the same
distribution (not stored facts).

Building costs minutes (100,000 x 768 into HNSW at EF_CONSTRUCTION 200: ~6 min for the
server, ~3 min for hnswlib with 2 threads), so the vectors, the exact answers, the hnswlib
index, the server's data directory (base snapshot) and the build measurements are kept in
``--cache`` (default ``/tmp/hotkv-sem-bench/<facts>x<dim>``) and reused by later runs with
the same parameters; ``--rebuild`` starts over. A run copies the cached data directory, so
the server under test always starts from the snapshot of the build.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hnswlib
import numpy as np
import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
from hotkv_server.stores.sem.facts import search_breadth  # noqa: E402

NS = "bench"
K = 10
M = 16
EF_CONSTRUCTION = 200
DEFAULT_EF = 64  # the namespace's EF (the server's default)
LATENT = 48
NOISE = 0.25
SEED = 20261129
#: EF values of the curve (hnswlib's ef; the server's effective breadth, see the docstring)
CURVE_EFS = (10, 16, 32, 64, 128, 200, 320, 512, 768, 1024)
SERVER_EFS = (64, 512, 768, 1024)  # nominal; 64 is the default and searches at 320


def fact_text(n: int) -> str:
    return f"fact {n}: topic {n % 97} note on item {n % 1000}"


# --- data -----------------------------------------------------------------------------------


def make_vectors(facts: int, queries: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(SEED)
    proj = (rng.standard_normal((LATENT, dim)) / np.sqrt(LATENT)).astype(np.float32)

    def draw(n: int) -> np.ndarray:
        out = np.empty((n, dim), dtype=np.float32)
        for start in range(0, n, 10_000):
            m = min(10_000, n - start)
            z = rng.standard_normal((m, LATENT)).astype(np.float32)
            out[start:start + m] = z @ proj + NOISE * rng.standard_normal((m, dim)).astype(
                np.float32)
        return out

    return draw(facts), draw(queries)


def exact_top(data: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """Exact cosine top ``k`` (indices) of every query, in chunks of the data."""
    qn = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    best_sims = np.full((len(queries), 0), -np.inf, dtype=np.float32)
    best_ids = np.zeros((len(queries), 0), dtype=np.int64)
    for start in range(0, len(data), 20_000):
        chunk = data[start:start + 20_000]
        sims = qn @ (chunk / np.linalg.norm(chunk, axis=1, keepdims=True)).T
        ids = np.broadcast_to(np.arange(start, start + len(chunk)), sims.shape)
        all_sims = np.concatenate([best_sims, sims], axis=1)
        all_ids = np.concatenate([best_ids, ids], axis=1)
        top = np.argpartition(-all_sims, k - 1, axis=1)[:, :k]
        best_sims = np.take_along_axis(all_sims, top, axis=1)
        best_ids = np.take_along_axis(all_ids, top, axis=1)
    order = np.argsort(-best_sims, axis=1)
    return np.take_along_axis(best_ids, order, axis=1)


def recall_at(found: Sequence[Sequence[int]], truth: np.ndarray) -> float:
    k = truth.shape[1]
    return float(np.mean([len(set(f) & set(t.tolist())) / k
                          for f, t in zip(found, truth, strict=True)]))


# --- the server -------------------------------------------------------------------------------


class Server:
    """``python -m hotkv_server`` with an AOF (fsync left to the OS, no automatic rewrite)."""

    def __init__(self, data_dir: Path, python: str, src: Path | None = None) -> None:
        self.dir = data_dir
        self.python = python
        self.src = src or ROOT / "src"
        self.log = data_dir / "hotkv.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    def start(self, timeout: float = 1800) -> float:
        """Start; the seconds from spawning to the "ready" log line."""
        offset = self.log.stat().st_size if self.log.exists() else 0
        env = dict(os.environ)
        env["PYTHONPATH"] = str(self.src) + os.pathsep + env.get("PYTHONPATH", "")
        cmd = [self.python, "-m", "hotkv_server", "--port", "0", "--bind", "127.0.0.1",
               "--dir", str(self.dir), "--logfile", str(self.log), "--appendonly", "yes",
               "--appendfsync", "no", "--auto-aof-rewrite-percentage", "0"]
        started = time.monotonic()
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)
        import re

        ready = re.compile(r"ready to accept connections on .* port (\d+)")
        while time.monotonic() - started < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"hotkv exited: {self._text(offset)[-2000:]}")
            match = ready.search(self._text(offset))
            if match:
                self.port = int(match.group(1))
                return time.monotonic() - started
            time.sleep(0.01)
        raise RuntimeError("hotkv did not start")

    def _text(self, offset: int) -> str:
        try:
            with open(self.log, "rb") as fh:
                fh.seek(offset)
                return fh.read().decode(errors="replace")
        except OSError:
            return ""

    def rss(self) -> int:
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS")

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=600)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(600)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def store_facts(r: redis.Redis, data: np.ndarray, log: Callable[[str], None]) -> float:
    started = time.monotonic()
    batch = 200
    for start in range(0, len(data), batch):
        p = r.pipeline(transaction=False)
        for n in range(start, min(len(data), start + batch)):
            p.execute_command("AMEM.SEM.STORE", NS, f"f{n}", fact_text(n), "FP32",
                              data[n].astype("<f4").tobytes())
        p.execute()
        if start % 20_000 == 0 and start:
            log(f"  stored {start:,} facts, {time.monotonic() - started:.0f} s")
    return time.monotonic() - started


# --- build (cached) ------------------------------------------------------------------------


@dataclass
class Options:
    facts: int = 100_000
    dim: int = 768
    queries: int = 500
    clients: int = 8
    seconds: float = 4.0
    repeat: int = 3
    restarts: int = 3
    #: measure memory per fact on a fresh server (see the module notes); 0 to skip
    memory_ef_construction: int = 16
    #: the 8-vs-1 clients as redis-py threads of this process (the earlier way)
    client_threads: bool = False
    cache: Path | None = None
    rebuild: bool = False
    python: str = sys.executable
    #: the hotkv source tree the server under test runs (an older checkout, for A/B)
    src: Path | None = None
    png: Path | None = None
    log: Callable[[str], None] = field(default=lambda line: print(line, file=sys.stderr,
                                                                   flush=True))

    def cache_dir(self) -> Path:
        return self.cache or Path(tempfile.gettempdir()) / "hotkv-sem-bench" / (
            f"{self.facts}x{self.dim}-q{self.queries}")


def build(opts: Options) -> dict[str, Any]:
    """Make (or reuse) the cached data set; return its build measurements."""
    cache = opts.cache_dir()
    meta_path = cache / "meta.json"
    if meta_path.exists() and not opts.rebuild:
        meta: dict[str, Any] = json.loads(meta_path.read_text())
        opts.log(f"using the cached build in {cache} (of {meta['built']}; --rebuild to redo)")
        return meta
    if cache.exists():
        shutil.rmtree(cache)
    cache.mkdir(parents=True)
    log = opts.log
    log(f"building {opts.facts:,} facts x {opts.dim} dims in {cache}")
    data, queries = make_vectors(opts.facts, opts.queries, opts.dim)
    truth = exact_top(data, queries, K)
    np.save(cache / "data.npy", data)
    np.save(cache / "queries.npy", queries)
    np.save(cache / "truth.npy", truth)

    server = Server(cache / "hotkv", opts.python)
    server.dir.mkdir()
    try:
        server.start()
        r = server.client()
        r.execute_command("AMEM.SEM.CREATE", NS, opts.dim, "M", M, "EF_CONSTRUCTION",
                          EF_CONSTRUCTION, "EF", DEFAULT_EF)
        rss_before = server.rss()
        log("storing the facts in hotkv (pipelined FP32 STOREs)")
        insert_s = store_facts(r, data, log)
        time.sleep(0.5)
        rss_after = server.rss()
        log(f"  {insert_s:.1f} s; RSS {rss_before / 2**20:.0f} -> {rss_after / 2**20:.0f} MiB")
        r.execute_command("BGREWRITEAOF")
        while int(r.info("persistence")["aof_rewrite_in_progress"]):
            time.sleep(0.2)
        r.close()
    finally:
        server.stop()

    log(f"building hnswlib (M {M}, EF_CONSTRUCTION {EF_CONSTRUCTION}, 2 threads)")
    started = time.monotonic()
    index = hnswlib.Index(space="cosine", dim=opts.dim)
    index.init_index(max_elements=opts.facts, M=M, ef_construction=EF_CONSTRUCTION)
    index.set_num_threads(2)
    index.add_items(data, np.arange(opts.facts))
    hnsw_s = time.monotonic() - started
    index.save_index(str(cache / "hnswlib.bin"))
    log(f"  {hnsw_s:.1f} s")
    text_bytes = sum(len(fact_text(n).encode()) for n in range(opts.facts))
    meta = {
        "built": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "facts": opts.facts, "dim": opts.dim, "queries": opts.queries,
        "insert_seconds": insert_s, "hnswlib_build_seconds_2_threads": hnsw_s,
        "rss_before": rss_before, "rss_after": rss_after,
        "raw_bytes": opts.facts * opts.dim * 4 + text_bytes,
    }
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    return meta


# --- measurements ----------------------------------------------------------------------------


def _ids(reply: list[Any]) -> list[int]:
    """Fact numbers of a RECALL reply (RESP2: each record a flat field/value array)."""
    out = []
    for rec in reply:
        fields = rec if isinstance(rec, dict) else dict(zip(rec[::2], rec[1::2], strict=True))
        out.append(int(fields[b"id"][1:]))
    return out


def server_pass(r: redis.Redis, blobs: list[bytes], ef: int) -> tuple[float, list[list[int]]]:
    """Sequential RECALLs of every query: (queries/s, the ids found)."""
    found = []
    extra = [] if ef == DEFAULT_EF else ["EF", ef]
    started = time.perf_counter()
    for blob in blobs:
        found.append(r.execute_command("AMEM.SEM.RECALL", NS, K, "FP32", blob, *extra))
    elapsed = time.perf_counter() - started
    return len(blobs) / elapsed, [_ids(reply) for reply in found]


def hnsw_pass(index: hnswlib.Index, queries: np.ndarray, ef: int) -> tuple[float, list[list[int]]]:
    index.set_ef(ef)
    found = []
    started = time.perf_counter()
    for q in queries:
        labels, _ = index.knn_query(q, k=K)
        found.append(labels[0])
    elapsed = time.perf_counter() - started
    return len(queries) / elapsed, [row.tolist() for row in found]


def recall_request(blob: bytes) -> bytes:
    """``AMEM.SEM.RECALL bench 10 FP32 <blob>`` as RESP bytes, built once per query."""
    parts = [b"AMEM.SEM.RECALL", NS.encode(), str(K).encode(), b"FP32", blob]
    out = [b"*%d\r\n" % len(parts)]
    for part in parts:
        out.append(b"$%d\r\n%s\r\n" % (len(part), part))
    return b"".join(out)


def _client_loop(port: int, requests: list[bytes], first: int, start_at: float,
                 stop_at: float, out: Any) -> None:
    """One client process: one RECALL at a time (send, read the whole reply, next) on its
    own connection, from ``start_at`` to ``stop_at`` (``time.monotonic``, shared by every
    process); puts the number of replies received in that window on ``out``."""
    import socket

    import hiredis

    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    reader = hiredis.Reader()
    recv, send = sock.recv, sock.sendall
    n = first
    count = 0
    while time.monotonic() < start_at:
        time.sleep(0.001)
    while True:
        send(requests[n % len(requests)])
        n += 1
        reply: Any = False
        while reply is False:
            reader.feed(recv(1 << 16))
            reply = reader.gets()
        if isinstance(reply, hiredis.ReplyError):
            raise RuntimeError(f"RECALL failed: {reply}")
        if time.monotonic() >= stop_at:
            break
        count += 1
    sock.close()
    out.put(count)


def clients_rate(port: int, requests: list[bytes], clients: int, seconds: float) -> float:
    """Queries/s of ``clients`` client processes, each its own connection, one RECALL at
    a time (no pipelining). The clients are processes with prebuilt request bytes and the
    C reply parser (hiredis), not redis-py threads: threads of one Python process share a
    GIL, and redis-py's per-call work would take CPU the server needs on this 2-core
    machine, which is then not what is measured. 1 client is measured the same way."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    start_at = time.monotonic() + 0.5 + 0.05 * clients  # after every process started
    stop_at = start_at + seconds
    procs = [ctx.Process(target=_client_loop,
                         args=(port, requests, i * 37, start_at, stop_at, out))
             for i in range(clients)]
    for proc in procs:
        proc.start()
    counts = [out.get(timeout=seconds + 120) for _ in procs]
    for proc in procs:
        proc.join()
        if proc.exitcode:
            raise RuntimeError(f"a client process failed (exit code {proc.exitcode})")
    return sum(counts) / seconds


def clients_rate_threads(port: int, blobs: list[bytes], clients: int, seconds: float) -> float:
    """The earlier way (redis-py clients as threads of this process), kept to compare."""
    counts = [0] * clients
    start_at = threading.Barrier(clients + 1)
    stop = threading.Event()

    def worker(i: int) -> None:
        r = redis.Redis(port=port, socket_timeout=600)
        r.ping()
        start_at.wait()
        n = i * 37
        while not stop.is_set():
            r.execute_command("AMEM.SEM.RECALL", NS, K, "FP32", blobs[n % len(blobs)])
            n += 1
            counts[i] += 1
        r.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    start_at.wait()
    started = time.perf_counter()
    time.sleep(seconds)
    done = sum(counts)
    elapsed = time.perf_counter() - started
    stop.set()
    for t in threads:
        t.join()
    return done / elapsed


def measure_memory(opts: Options, data: np.ndarray, src: Path | None) -> dict[str, Any]:
    """RSS growth of a fresh server while it stores ``data`` (pipelined FP32 STOREs, as the
    build), in a namespace of M 16 and ``opts.memory_ef_construction``."""
    with tempfile.TemporaryDirectory(prefix="hotkv-sem-mem-") as tmp:
        server = Server(Path(tmp), opts.python, src)
        server.start()
        try:
            r = server.client()
            r.execute_command("AMEM.SEM.CREATE", NS, opts.dim, "M", M, "EF_CONSTRUCTION",
                              opts.memory_ef_construction, "EF", DEFAULT_EF)
            time.sleep(0.3)
            before = server.rss()
            seconds = store_facts(r, data, lambda line: None)
            time.sleep(0.5)
            after = server.rss()
            r.close()
        finally:
            server.stop()
    opts.log(f"memory: a fresh server grew {(after - before) / len(data):,.0f} B/fact storing "
             f"{len(data):,} facts ({seconds:.0f} s at EF_CONSTRUCTION "
             f"{opts.memory_ef_construction})")
    return {"rss_before": before, "rss_after": after, "facts": len(data),
            "ef_construction": opts.memory_ef_construction, "seconds": seconds}


def run(opts: Options) -> dict[str, Any]:
    """Build or reuse the data set, measure everything, return the results (JSON-able)."""
    log = opts.log
    meta = build(opts)
    cache = opts.cache_dir()
    queries = np.load(cache / "queries.npy")
    truth = np.load(cache / "truth.npy")
    blobs = [q.astype("<f4").tobytes() for q in queries]
    index = hnswlib.Index(space="cosine", dim=opts.dim)
    index.load_index(str(cache / "hnswlib.bin"), max_elements=opts.facts)
    index.set_num_threads(1)

    out: dict[str, Any] = {"build": meta, "k": K, "m": M, "ef_construction": EF_CONSTRUCTION,
                           "default_ef": DEFAULT_EF, "queries": len(queries)}
    with tempfile.TemporaryDirectory(prefix="hotkv-sem-bench-") as tmp:
        data_dir = Path(tmp) / "hotkv"
        shutil.copytree(cache / "hotkv", data_dir)
        (data_dir / "hotkv.log").unlink(missing_ok=True)
        server = Server(data_dir, opts.python, opts.src)
        restarts: list[float] = []
        rss_loaded: list[int] = []
        try:
            for i in range(opts.restarts):
                restarts.append(server.start())
                rss_loaded.append(server.rss())
                log(f"restart from the base #{i + 1}: {restarts[-1]:.2f} s")
                if i + 1 < opts.restarts:
                    server.stop()
            out["restart_seconds"] = restarts
            out["rss_after_restart"] = rss_loaded
            r = server.client()
            info = r.execute_command("AMEM.SEM.INFO", NS)
            if not isinstance(info, dict):
                info = dict(zip(info[::2], info[1::2], strict=True))
            count = int(info[b"count"])
            if count != opts.facts:
                raise RuntimeError(f"the server holds {count} facts, expected {opts.facts}")
            # warm-up: the first searches fault pages in
            server_pass(r, blobs[:50], DEFAULT_EF)
            hnsw_pass(index, queries[:50], 320)

            efs = sorted(set(CURVE_EFS) | {search_breadth(e, K) for e in SERVER_EFS})
            curve_hnsw: dict[int, dict[str, Any]] = {}
            curve_server: dict[int, dict[str, Any]] = {}
            for rep in range(opts.repeat):
                for ef in efs:
                    qps, found = hnsw_pass(index, queries, ef)
                    entry = curve_hnsw.setdefault(ef, {"qps": [], "recall": recall_at(found,
                                                                                      truth)})
                    entry["qps"].append(qps)
                for ef in SERVER_EFS:
                    qps, found = server_pass(r, blobs, ef)
                    breadth = search_breadth(ef, K)
                    entry = curve_server.setdefault(ef, {"breadth": breadth, "qps": [],
                                                         "recall": recall_at(found, truth)})
                    entry["qps"].append(qps)
                log(f"pass {rep + 1}: hnswlib ef 320 "
                    f"{curve_hnsw[320]['qps'][-1]:,.0f} q/s, hotkv EF {DEFAULT_EF} (breadth "
                    f"{search_breadth(DEFAULT_EF, K)}) {curve_server[DEFAULT_EF]['qps'][-1]:,.0f}"
                    " q/s")
            out["curve_hnswlib"] = {str(k): v for k, v in curve_hnsw.items()}
            out["curve_hotkv"] = {str(k): v for k, v in curve_server.items()}

            one: list[float] = []
            many: list[float] = []
            requests = [recall_request(blob) for blob in blobs]

            def rate(clients: int) -> float:
                if opts.client_threads:
                    return clients_rate_threads(server.port, blobs, clients, opts.seconds)
                return clients_rate(server.port, requests, clients, opts.seconds)

            for rep in range(opts.repeat):
                one.append(rate(1))
                many.append(rate(opts.clients))
                log(f"clients #{rep + 1}: 1 client {one[-1]:,.0f} q/s, {opts.clients} clients "
                    f"{many[-1]:,.0f} q/s")
            out["clients"] = opts.clients
            out["client_kind"] = "redis-py threads" if opts.client_threads else "processes"
            out["one_client_qps"] = one
            out["many_clients_qps"] = many
            r.close()
        finally:
            server.stop()
    if opts.memory_ef_construction:
        out["memory"] = measure_memory(opts, np.load(cache / "data.npy", mmap_mode="r"),
                                       opts.src)
    if opts.png is not None:
        plot(out, opts.png)
        out["png"] = str(opts.png)
    return out


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    hn = sorted((int(k), v) for k, v in result["curve_hnswlib"].items())
    ax.plot([statistics.median(v["qps"]) for _, v in hn], [v["recall"] for _, v in hn], "o-",
            label="hnswlib knn_query, in process")
    for ef, v in hn:
        ax.annotate(f"ef {ef}", (statistics.median(v["qps"]), v["recall"]), fontsize=7,
                    textcoords="offset points", xytext=(4, -9))
    sv = sorted((int(k), v) for k, v in result["curve_hotkv"].items())
    ax.plot([statistics.median(v["qps"]) for _, v in sv], [v["recall"] for _, v in sv], "s-",
            label="hotkv AMEM.SEM.RECALL, redis-py, 1 client")
    for ef, v in sv:
        ax.annotate(f"EF {ef} (breadth {v['breadth']})",
                    (statistics.median(v["qps"]), v["recall"]), fontsize=7,
                    textcoords="offset points", xytext=(4, 4))
    build_meta = result["build"]
    ax.set_xscale("log")
    ax.set_xlabel("queries/s (one at a time, median of runs)")
    ax.set_ylabel(f"recall@{result['k']} vs exact")
    ax.set_title(f"{build_meta['facts']:,} x {build_meta['dim']} cosine, M {result['m']}, "
                 f"EF_CONSTRUCTION {result['ef_construction']}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# --- summary ---------------------------------------------------------------------------------


def ratio_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's rows: each with per-run ratios, its target and how it is compared."""
    rows: list[dict[str, Any]] = []
    breadth = search_breadth(DEFAULT_EF, K)
    srv = result["curve_hotkv"][str(DEFAULT_EF)]
    hn = result["curve_hnswlib"][str(breadth)]
    ratios = [s / h for s, h in zip(srv["qps"], hn["qps"], strict=True)]
    rows.append({"title": f"AMEM.SEM.RECALL k={K}, 1 client vs hnswlib knn_query ef {breadth}",
                 "ratios": ratios, "target": 0.60, "op": ">=", "reference": "hnswlib in process",
                 "note": f"hotkv {statistics.median(srv['qps']):,.0f} q/s, hnswlib "
                         f"{statistics.median(hn['qps']):,.0f} q/s; recall@{K} hotkv "
                         f"{srv['recall']:.3f}, hnswlib {hn['recall']:.3f}"})
    rows.append({"title": f"recall@{K} of AMEM.SEM.RECALL (EF {DEFAULT_EF}, breadth {breadth})",
                 "ratios": [srv["recall"]], "target": 0.95, "op": ">=", "note": "vs exact",
                 "reference": "exact (numpy)"})
    many = [m / o for m, o in zip(result["many_clients_qps"], result["one_client_qps"],
                                  strict=True)]
    kind = result.get("client_kind", "redis-py threads")
    rows.append({"title": f"AMEM.SEM.RECALL, {result['clients']} clients vs 1 client",
                 "ratios": many, "target": 1.5, "op": ">", "reference": "1 client",
                 "note": f"1 client {statistics.median(result['one_client_qps']):,.0f} q/s, "
                         f"{result['clients']} clients "
                         f"{statistics.median(result['many_clients_qps']):,.0f} q/s "
                         f"(clients: {kind})"})
    b = result["build"]
    built = (b["rss_after"] - b["rss_before"]) / b["facts"]
    restarted = statistics.median(result["rss_after_restart"]) / b["facts"]
    raw = b["raw_bytes"] / b["facts"]
    mem = result.get("memory")
    if mem is not None:
        per_fact = (mem["rss_after"] - mem["rss_before"]) / mem["facts"]
        how = (f"RSS growth of a fresh server {per_fact:,.0f} B/fact while storing "
               f"(EF_CONSTRUCTION {mem['ef_construction']}), the cached build's "
               f"{built:,.0f} B/fact ({b['built']})")
    else:
        per_fact = built
        how = f"RSS growth {per_fact:,.0f} B/fact while storing (build of {b['built']})"
    rows.append({"title": "memory per fact / raw vector + text bytes", "ratios": [per_fact / raw],
                 "target": 1.3, "op": "<=", "reference": "raw bytes",
                 "note": f"{how}, raw {raw:,.0f} B; after a restart RSS {restarted:,.0f} "
                         "B/fact (whole process)"})
    rows.append({"title": "restart from the base snapshot vs re-inserting (speed-up)",
                 "ratios": [b["insert_seconds"] / s for s in result["restart_seconds"]],
                 "target": 10.0, "op": ">=", "reference": "re-inserting",
                 "note": f"storing took {b['insert_seconds']:.0f} s (build of {b['built']}); "
                         f"restarts {', '.join(f'{s:.1f}' for s in result['restart_seconds'])} s"})
    return rows


def row_verdict(row: dict[str, Any]) -> tuple[float, str]:
    """A row's median ratio and whether it meets its target (``ok`` / ``BELOW TARGET``)."""
    med = statistics.median(row["ratios"])
    ok = {">=": med >= row["target"], ">": med > row["target"],
          "<=": med <= row["target"]}[row["op"]]
    return med, "ok" if ok else "BELOW TARGET"


def format_rows(rows: Sequence[dict[str, Any]]) -> str:
    lines = ["| what | ratio min / median / max | target | | notes |", "|---|---:|---:|---|---|"]
    for row in rows:
        rs = row["ratios"]
        med, verdict = row_verdict(row)
        lines.append(f"| {row['title']} | {min(rs):.2f} / {med:.2f} / {max(rs):.2f} "
                     f"| {row['op']} {row['target']:g} | {verdict} | {row['note']} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=4.0,
                        help="length of one many-clients / one-client run")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--png", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--hotkv-src", type=Path, default=None,
                        help="run the server under test from this source tree (A/B runs)")
    parser.add_argument("--memory-ef-construction", type=int, default=16,
                        help="EF_CONSTRUCTION of the fresh server measuring memory per fact "
                        "(0: skip it and report the cached build's)")
    parser.add_argument("--client-threads", action="store_true",
                        help="8-vs-1 clients as redis-py threads of this process (the earlier "
                        "way) instead of processes")
    args = parser.parse_args(argv)
    opts = Options(facts=args.facts, dim=args.dim, queries=args.queries, clients=args.clients,
                   seconds=args.seconds, repeat=args.repeat, cache=args.cache,
                   rebuild=args.rebuild, png=args.png, src=args.hotkv_src,
                   memory_ef_construction=args.memory_ef_construction,
                   client_threads=args.client_threads)
    result = run(opts)
    print(format_rows(ratio_rows(result)))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
