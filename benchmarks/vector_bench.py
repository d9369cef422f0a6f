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
import statistics
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
    """The row of the smallest ef whose recall is >= 0.95 (else the last)."""
    for row in rows:
        if row["recall"] >= 0.95:
            return row
    return rows[-1]


def bytes_rows(python: str, data: np.ndarray, queries: np.ndarray,
               log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Bytes per vector of each mode, and its recall@10 against an exact float search of the
    same vectors (``VSIM ... EF 200``: the quantization's cost, not the graph's)."""
    truth = exact_top(data, queries, K)
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
                requests = [resp(b"VSIM", b"b", b"FP32", q.astype("<f4").tobytes(), b"COUNT",
                                 b"10", b"EF", b"200") for q in queries]
                recall = recall_at(server_found(r, requests), truth)
                out.append({"quant": quant, "stored_vector_bytes": len(emb[1]),
                            "memory_usage": usage, "rss": rss, "aof": aof, "snapshot": snap,
                            "recall_at_10_ef200": recall})
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
    parser.add_argument("--repeat", type=int, default=3,
                        help="paired passes (hnswlib, then the server) per ef; medians")
    parser.add_argument("--skip-bytes", action="store_true")
    parser.add_argument("--bytes-only", action="store_true",
                        help="only the bytes-per-vector and recall-per-mode rows")
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
    result["bytes"] = ([] if opts.skip_bytes
                       else bytes_rows(python, data[: opts.bytes_n], queries, log))
    if opts.bytes_only:
        print(json.dumps(result["bytes"], indent=2))
        return 0

    log("raw hnswlib build")
    index = hnswlib.Index(space="cosine", dim=opts.dim)
    index.init_index(max_elements=opts.n, M=M, ef_construction=EF_CONSTRUCTION)
    started = time.monotonic()
    index.add_items(data, np.arange(opts.n))
    result["hnswlib_build_s"] = time.monotonic() - started
    index.set_num_threads(1)

    with tempfile.TemporaryDirectory(prefix="vbench-") as tmp:
        server = Server(Path(tmp), python)
        server.start()
        try:
            r = server.client()
            result["vadd_s"] = load_vset(r, data, "NOQUANT", KEY)
            log(f"VADD of {opts.n}: {result['vadd_s']:.1f} s")
            result["vsim_set_s"] = load_index(r, data)
            log(f"VSIM.SET of {opts.n}: {result['vsim_set_s']:.1f} s")
            # paired passes: the load of this shared machine changes from minute to minute, so
            # each server pass sits between hnswlib passes of the same moment
            raw_rows = []
            for ef in efs:
                raw_qps, raw_recall = [], 0.0
                row: dict[str, Any] = {"ef": ef}
                for name, build in (("vsim", vsim_request), ("vsim_search", search_request)):
                    requests = [build(q, ef) for q in queries]
                    row[f"{name}_recall"] = recall_at(server_found(r, requests), truth)
                    ones, manys, raws = [], [], []
                    for _ in range(opts.repeat):
                        rate, found = hnsw_pass(index, queries, ef)
                        raws.append(rate)
                        raw_recall = recall_at(found, truth)
                        ones.append(clients_rate(server.port, requests, 1, opts.seconds))
                        manys.append(clients_rate(server.port, requests, opts.clients,
                                                  opts.seconds))
                        rate, _ = hnsw_pass(index, queries, ef)
                        raws.append(rate)
                    row[f"{name}_qps_1"] = statistics.median(ones)
                    row[f"{name}_qps_n"] = statistics.median(manys)
                    row[f"{name}_hnswlib_qps"] = statistics.median(raws)
                    raw_qps += raws
                row["hnswlib_recall"] = raw_recall
                row["hnswlib_qps"] = statistics.median(raw_qps)
                raw_rows.append(row)
                log(f"ef {ef}: {row}")
            result["rows"] = raw_rows
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
    rows = result["rows"]
    raw = first_passing([{**r, "recall": r["hnswlib_recall"]} for r in rows])
    out: dict[str, Any] = {"hnswlib_at_0.95": {"ef": raw["ef"], "recall": raw["recall"],
                                               "qps": raw["hnswlib_qps"]}}
    for name in ("vsim", "vsim_search"):
        row = first_passing([{**r, "recall": r[f"{name}_recall"]} for r in rows])
        out[name] = {"ef": row["ef"], "recall": row["recall"], "qps_1": row[f"{name}_qps_1"],
                     "qps_n": row[f"{name}_qps_n"],
                     "hnswlib_qps_paired": row[f"{name}_hnswlib_qps"],
                     "vs_hnswlib_1_client": row[f"{name}_qps_1"] / row[f"{name}_hnswlib_qps"],
                     "clients_scaling": row[f"{name}_qps_n"] / row[f"{name}_qps_1"]}
    reinsert = result["vadd_s"] + result["vsim_set_s"]
    out["restart"] = {"restart_s": result["restart_s"], "reinsert_s": reinsert,
                      "speedup": reinsert / result["restart_s"]}
    out["bytes"] = result["bytes"]
    return out


if __name__ == "__main__":
    raise SystemExit(main())
