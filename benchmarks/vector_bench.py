"""Vector sets (VSIM) and HotKV's VSIM.* index (VSIM.SEARCH) against raw hnswlib, in one run.

Rows (issue 18):

* queries/s of ``VSIM key FP32 <q> COUNT 10 EF ef`` (a NOQUANT vector set) and of
  ``VSIM.SEARCH index 10 <q...> EF ef`` over N x DIM vectors, 1 client and 8 clients,
  against hnswlib ``knn_query`` (k 10, same M, ef_construction and ef, one query at a time,
  one thread) in this process, at the smallest ef of ``--efs`` whose recall@10 (against an
  exact numpy search) is >= 0.95 for that path;
* bytes per vector of NOQUANT, Q8 and BIN sets (``--bytes-n`` vectors each, a server of its
  own): MEMORY USAGE, RSS growth, AOF bytes (what effects and replicas carry) and snapshot
  bytes (the rewritten base);
* a restart of the server holding the N-vector set and index from its snapshot (BGREWRITEAOF
  first), against the time their VADD and VSIM.SET took.

The clients are processes with prebuilt request bytes and hiredis (``sem_bench``'s), the
data are ``sem_bench``'s (a 48-d latent space projected to DIM plus noise).

    .venv/bin/python benchmarks/vector_bench.py                      # 100k x 768
    .venv/bin/python benchmarks/vector_bench.py --n 20000 --dim 256  # a quick run
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hnswlib
import numpy as np
import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sem_bench import (
    Server,
    clients_rate,
    exact_top,
    hnsw_pass,
    make_vectors,
    recall_at,
)

K = 10
M = 16
EF_CONSTRUCTION = 200
KEY = "vbench"
INDEX = "vbench-index"


def resp(*parts: bytes) -> bytes:
    out = [b"*%d\r\n" % len(parts)]
    for part in parts:
        out.append(b"$%d\r\n%s\r\n" % (len(part), part))
    return b"".join(out)


def texts(vec: np.ndarray) -> list[bytes]:
    return [repr(float(x)).encode() for x in vec]


def vsim_request(q: np.ndarray, ef: int) -> bytes:
    return resp(b"VSIM", KEY.encode(), b"FP32", q.astype("<f4").tobytes(), b"COUNT", b"10",
                b"EF", str(ef).encode())


def search_request(q: np.ndarray, ef: int) -> bytes:
    return resp(b"VSIM.SEARCH", INDEX.encode(), b"10", *texts(q), b"EF", str(ef).encode())


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and f.suffix != ".log")


def wait_rewrite(r: redis.Redis) -> None:
    time.sleep(0.2)
    while r.info("persistence")["aof_rewrite_in_progress"]:
        time.sleep(0.1)


def load_vset(r: redis.Redis, data: np.ndarray, quant: str, key: str) -> float:
    started = time.monotonic()
    for start in range(0, len(data), 500):
        p = r.pipeline(transaction=False)
        for i in range(start, min(start + 500, len(data))):
            p.execute_command("VADD", key, "FP32", data[i].astype("<f4").tobytes(), i, quant)
        p.execute()
    return time.monotonic() - started


def load_index(r: redis.Redis, data: np.ndarray) -> float:
    started = time.monotonic()
    r.execute_command("VSIM.CREATEINDEX", INDEX, data.shape[1], "METRIC", "cosine",
                      "M", M, "EF_CONSTRUCTION", EF_CONSTRUCTION)
    for start in range(0, len(data), 200):
        p = r.pipeline(transaction=False)
        for i in range(start, min(start + 200, len(data))):
            p.execute_command("VSIM.SET", INDEX, i, *texts(data[i]))
        p.execute()
    return time.monotonic() - started


def server_found(r: redis.Redis, requests: list[bytes]) -> list[list[int]]:
    """The ids each request found (VSIM: names; VSIM.SEARCH: names and distances)."""
    conn = r.connection_pool.get_connection()
    found = []
    for req in requests:
        conn.send_packed_command([req])
        reply = conn.read_response()
        names = reply[::2] if req.startswith(b"*") and b"VSIM.SEARCH" in req[:24] else reply
        found.append([int(x) for x in names])
    r.connection_pool.release(conn)
    return found


def first_passing(rows: list[dict[str, Any]]) -> dict[str, Any]:
    for row in rows:
        if row["recall"] >= 0.95:
            return row
    return rows[-1]


def bytes_rows(python: str, data: np.ndarray, log: Callable[[str], None]) -> list[dict[str, Any]]:
    out = []
    for quant in ("NOQUANT", "Q8", "BIN"):
        with tempfile.TemporaryDirectory(prefix="vbench-bytes-") as tmp:
            server = Server(Path(tmp), python)
            server.start()
            try:
                r = server.client()
                base_rss, base_files = server.rss(), dir_bytes(Path(tmp))
                load_vset(r, data, quant, "b")
                n = len(data)
                aof = (dir_bytes(Path(tmp)) - base_files) / n
                usage = r.memory_usage("b") / n
                rss = (server.rss() - base_rss) / n
                r.bgrewriteaof()
                wait_rewrite(r)
                snap = (dir_bytes(Path(tmp)) - base_files) / n
                emb = r.execute_command("VEMB", "b", 0, "RAW")
                out.append({"quant": quant, "stored_vector_bytes": len(emb[1]),
                            "memory_usage": usage, "rss": rss, "aof": aof, "snapshot": snap})
                log(f"bytes {quant}: {out[-1]}")
            finally:
                server.stop()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--efs", default="64,100,200,400")
    parser.add_argument("--bytes-n", type=int, default=10_000)
    parser.add_argument("--json", type=Path, default=None)
    opts = parser.parse_args(argv)
    efs = [int(x) for x in opts.efs.split(",")]
    python = sys.executable

    def log(text: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)

    log(f"load average before: {os.getloadavg()}")
    data, queries = make_vectors(opts.n, opts.queries, opts.dim)
    truth = exact_top(data, queries, K)
    result: dict[str, Any] = {"n": opts.n, "dim": opts.dim, "queries": opts.queries,
                              "load_before": os.getloadavg()}
    result["bytes"] = bytes_rows(python, data[: opts.bytes_n], log)

    log("raw hnswlib build")
    index = hnswlib.Index(space="cosine", dim=opts.dim)
    index.init_index(max_elements=opts.n, M=M, ef_construction=EF_CONSTRUCTION)
    started = time.monotonic()
    index.add_items(data, np.arange(opts.n))
    result["hnswlib_build_s"] = time.monotonic() - started
    index.set_num_threads(1)
    raw_rows = []
    for ef in efs:
        rate, found = hnsw_pass(index, queries, ef)
        raw_rows.append({"ef": ef, "qps": rate, "recall": recall_at(found, truth)})
        log(f"hnswlib ef {ef}: {raw_rows[-1]}")
    result["hnswlib"] = raw_rows
    del index

    with tempfile.TemporaryDirectory(prefix="vbench-") as tmp:
        server = Server(Path(tmp), python)
        server.start()
        try:
            r = server.client()
            result["vadd_s"] = load_vset(r, data, "NOQUANT", KEY)
            log(f"VADD of {opts.n}: {result['vadd_s']:.1f} s")
            result["vsim_set_s"] = load_index(r, data)
            log(f"VSIM.SET of {opts.n}: {result['vsim_set_s']:.1f} s")
            for name, build in (("vsim", vsim_request), ("vsim_search", search_request)):
                rows = []
                for ef in efs:
                    requests = [build(q, ef) for q in queries]
                    recall = recall_at(server_found(r, requests), truth)
                    one = clients_rate(server.port, requests, 1, opts.seconds)
                    many = clients_rate(server.port, requests, opts.clients, opts.seconds)
                    rows.append({"ef": ef, "recall": recall, "qps_1": one, "qps_n": many})
                    log(f"{name} ef {ef}: {rows[-1]}")
                result[name] = rows
            r.bgrewriteaof()
            wait_rewrite(r)
            result["snapshot_bytes"] = dir_bytes(Path(tmp))
            r.close()
            server.stop()
            result["restart_s"] = server.start()
            r = server.client()
            check = server_found(r, [vsim_request(queries[0], efs[-1])])
            assert recall_at(check, truth[:1]) >= 0.9, "the restarted set answers differently"
            log(f"restart: {result['restart_s']:.2f} s")
        finally:
            server.stop()
    result["load_after"] = os.getloadavg()
    summary = summarize(result)
    result["summary"] = summary
    print(json.dumps(summary, indent=2))
    if opts.json:
        opts.json.write_text(json.dumps(result, indent=2))
    subprocess.run(["uptime"], check=False)
    return 0


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    raw = first_passing(result["hnswlib"])
    out: dict[str, Any] = {"hnswlib_at_0.95": raw}
    for name in ("vsim", "vsim_search"):
        row = first_passing(result[name])
        same_ef = next(r for r in result["hnswlib"] if r["ef"] == row["ef"])
        out[name] = {**row, "vs_hnswlib_1_client": row["qps_1"] / raw["qps"],
                     "vs_hnswlib_same_ef": row["qps_1"] / same_ef["qps"],
                     "clients_scaling": row["qps_n"] / row["qps_1"]}
    reinsert = result["vadd_s"] + result["vsim_set_s"]
    out["restart"] = {"restart_s": result["restart_s"], "reinsert_s": reinsert,
                      "speedup": reinsert / result["restart_s"]}
    out["bytes"] = result["bytes"]
    return out


if __name__ == "__main__":
    raise SystemExit(main())
