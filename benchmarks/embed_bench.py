"""Embeddings inside the server: speed of the embedders, of store/recall by text, the GET
latency of other clients during a bulk store by text, and recall@5 on a labelled set.

Run from the repository root with the project's venv (it starts its own servers)::

    .venv/bin/python benchmarks/embed_bench.py                 # everything, about a minute
    .venv/bin/python benchmarks/embed_bench.py --quick         # smaller counts, a smoke run
    .venv/bin/python benchmarks/embed_bench.py --json /tmp/embed.json

Sections:

* ``embedders``: texts embedded per second, in process, batches of 256: wordllama; the
  openai embedder against the fake OpenAI-compatible endpoint of the tests (a local HTTP
  server: what the HTTP path costs, not a real model); fastembed on the tiny ONNX model of
  the tests (the fastembed/onnxruntime pipeline's cost, not a real model's).
* ``server``: a ``python -m hotkv_server`` with wordllama: AMEM.SEM.STORE by text
  (unique texts, so every one is embedded; pipelined 100 deep from 4 clients), the same
  texts again (all from the embedding cache), AMEM.SEM.RECALL ... TEXT (unique queries,
  one client unpipelined and 4 clients pipelined 32 deep).
* ``latency``: p50/p99 of GET from 2 other clients, one request at a time, first on an idle
  server, then while 2 clients bulk-store by text with the cache off (the target: p99
  during the bulk store within 2x of idle).
* ``quality``: recall@5 (share of questions whose fact is among the 5 hits) of the 100
  questions of benchmarks/data/embed_questions.tsv over the 200 facts of
  embed_facts.tsv: BM25 (AMEM.SEM.SEARCH on a namespace without an embedder), wordllama
  (RECALL TEXT), hybrid RRF and LINEAR (SEARCH on the namespace with the embedder).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import redis

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "src"))


def load_set() -> tuple[dict[str, str], list[tuple[str, str]]]:
    with open(DATA / "embed_facts.tsv", newline="") as fh:
        facts = {row["id"]: row["text"] for row in csv.DictReader(fh, delimiter="\t")}
    with open(DATA / "embed_questions.tsv", newline="") as fh:
        questions = [(row["fact"], row["question"]) for row in csv.DictReader(fh, delimiter="\t")]
    return facts, questions


def corpus(n: int) -> list[str]:
    """n distinct texts built from the labelled facts (so every one is embedded anew)."""
    facts, questions = load_set()
    base = list(facts.values()) + [q for _, q in questions]
    return [f"{base[i % len(base)]} (note {i})" for i in range(n)]


# --- embedders in process ------------------------------------------------------------


def rate(embed: Any, texts: list[str], batch: int = 256) -> float:
    embed(texts[:batch])  # load and warm up
    started = time.perf_counter()
    for i in range(0, len(texts), batch):
        embed(texts[i : i + batch])
    return len(texts) / (time.perf_counter() - started)


def bench_embedders(n: int) -> dict[str, Any]:
    from embedding.fake_openai import FakeEmbeddings
    from embedding.tiny_onnx import build_model
    from hotkv_server.embedding.fastembed import FastEmbedEmbedder
    from hotkv_server.embedding.openai import HttpSettings, OpenAIEmbedder
    from hotkv_server.embedding.wordllama import WordLlamaEmbedder

    texts = corpus(n)
    out: dict[str, Any] = {}
    started = time.perf_counter()
    wordllama = WordLlamaEmbedder()
    wordllama.load()
    out["wordllama_load_s"] = time.perf_counter() - started
    out["wordllama"] = rate(wordllama.embed, texts)
    fake = FakeEmbeddings(256)
    try:
        http = OpenAIEmbedder(HttpSettings(url=fake.url, model="fake", dim=256, batch_size=256))
        out["openai_fake"] = rate(http.embed, texts[: max(512, n // 4)])
    finally:
        fake.close()
    with tempfile.TemporaryDirectory() as folder:
        build_model(Path(folder), 8)
        tiny = FastEmbedEmbedder(folder, 8)
        out["fastembed_tiny"] = rate(tiny.embed, texts)
    return out


# --- a server -------------------------------------------------------------------------


class Server:
    def __init__(self, *args: str) -> None:
        from helpers import HotkvProcess

        self.proc = HotkvProcess(*args).start()
        self.port = self.proc.port

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, protocol=3)

    def close(self) -> None:
        self.proc.cleanup()


def parallel(workers: int, job: Any) -> float:
    threads = [threading.Thread(target=job, args=(w,)) for w in range(workers)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - started


def bench_server(server: Server, n: int) -> dict[str, Any]:
    c = server.client()
    c.execute_command("AMEM.SEM.CREATE", "bulk", "EMBEDDER", "wordllama")
    c.execute_command("AMEM.SEM.CREATE", "again", "EMBEDDER", "wordllama")
    c.execute_command("AMEM.SEM.STORE", "bulk", "warm", "load the model first")
    texts = corpus(n)
    workers = 4

    def store(ns: str) -> Any:
        def job(w: int) -> None:
            client = server.client()
            pipe = client.pipeline(transaction=False)
            for i in range(w, len(texts), workers):
                pipe.execute_command("AMEM.SEM.STORE", ns, f"f{i}", texts[i])
                if len(pipe) == 100:
                    pipe.execute()
            pipe.execute()
        return job

    out: dict[str, Any] = {}
    out["store_text_cold"] = n / parallel(workers, store("bulk"))
    out["store_text_cached"] = n / parallel(workers, store("again"))
    queries = [f"question {i} about {t}" for i, t in enumerate(corpus(max(200, n // 5)))]
    started = time.perf_counter()
    for q in queries[: len(queries) // 2]:
        c.execute_command("AMEM.SEM.RECALL", "bulk", 5, "TEXT", q)
    out["recall_text_1client"] = (len(queries) // 2) / (time.perf_counter() - started)
    rest = queries[len(queries) // 2 :]

    def recall(w: int) -> None:
        client = server.client()
        pipe = client.pipeline(transaction=False)
        for q in rest[w::workers]:
            pipe.execute_command("AMEM.SEM.RECALL", "bulk", 5, "TEXT", q)
            if len(pipe) == 32:
                pipe.execute()
        pipe.execute()

    out["recall_text_4clients_p32"] = len(rest) / parallel(workers, recall)
    return out


def get_latencies(server: Server, seconds: float, clients: int = 2) -> list[float]:
    samples: list[float] = []
    lock = threading.Lock()

    def job(_: int) -> None:
        c = server.client()
        c.set("k", "v")
        mine = []
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            c.get("k")
            mine.append(time.perf_counter() - t0)
            time.sleep(0.001)  # an interactive client, not a flood
        with lock:
            samples.extend(mine)

    parallel(clients, job)
    return samples


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000, q))


def bench_latency(server: Server, seconds: float) -> dict[str, Any]:
    c = server.client()
    c.execute_command("CONFIG", "SET", "embed-cache-max-memory", "0")  # every store embeds
    c.execute_command("AMEM.SEM.CREATE", "lat", "EMBEDDER", "wordllama")
    idle = get_latencies(server, seconds)
    stop = threading.Event()
    stored = [0]
    texts = corpus(20_000)

    def bulk(w: int) -> None:
        client = server.client()
        i = w
        while not stop.is_set():
            pipe = client.pipeline(transaction=False)
            for _ in range(100):
                pipe.execute_command("AMEM.SEM.STORE", "lat", f"f{i}", texts[i % len(texts)])
                i += 2
            pipe.execute()
            stored[0] += 100

    writers = [threading.Thread(target=bulk, args=(w,)) for w in range(2)]
    for t in writers:
        t.start()
    time.sleep(0.3)
    busy = get_latencies(server, seconds)
    stop.set()
    for t in writers:
        t.join()
    c.execute_command("CONFIG", "SET", "embed-cache-max-memory", "64mb")
    out = {
        "idle_p50_ms": pct(idle, 50), "idle_p99_ms": pct(idle, 99),
        "busy_p50_ms": pct(busy, 50), "busy_p99_ms": pct(busy, 99),
        "bulk_stores_per_s": stored[0] / (seconds + 0.3),
        "samples": [len(idle), len(busy)],
    }
    out["p99_ratio"] = out["busy_p99_ms"] / out["idle_p99_ms"]
    return out


def bench_quality(server: Server) -> dict[str, Any]:
    facts, questions = load_set()
    c = server.client()
    c.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "wordllama")
    c.execute_command("AMEM.SEM.CREATE", "bm25", 4)
    rng = np.random.default_rng(1)
    pipe = c.pipeline(transaction=False)
    for ident, text in facts.items():
        pipe.execute_command("AMEM.SEM.STORE", "kb", ident, text)
        pipe.execute_command("AMEM.SEM.STORE", "bm25", ident, text, "FP32",
                             rng.standard_normal(4).astype("<f4").tobytes())
    pipe.execute()
    methods = {
        "bm25": ("AMEM.SEM.SEARCH", "bm25"),
        "wordllama": ("AMEM.SEM.RECALL", "kb", "TEXT"),
        "hybrid_rrf": ("AMEM.SEM.SEARCH", "kb"),
        "hybrid_linear": ("AMEM.SEM.SEARCH", "kb", "LINEAR"),
    }
    out: dict[str, Any] = {"facts": len(facts), "questions": len(questions)}
    for name, spec in methods.items():
        found = 0
        for fact, question in questions:
            if spec[0] == "AMEM.SEM.RECALL":
                reply = c.execute_command(spec[0], spec[1], 5, "TEXT", question)
            elif len(spec) == 3:
                reply = c.execute_command(spec[0], spec[1], 5, "TEXT", question, "FUSION", "LINEAR")
            else:
                reply = c.execute_command(spec[0], spec[1], 5, "TEXT", question)
            ids = [hit[b"id"].decode() for hit in reply]
            found += fact in ids
        out[name] = found / len(questions)
    return out


def machine() -> dict[str, Any]:
    return {"python": platform.python_version(), "cpus": os.cpu_count(),
            "load_before": os.getloadavg()[0], "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def table(report: dict[str, Any]) -> str:
    e, s, lat, q = report["embedders"], report["server"], report["latency"], report["quality"]
    lines = [
        f"Run of {report['machine']['date']} (load {report['machine']['load_before']:.2f} before, "
        f"{report['machine']['cpus']} CPUs)",
        "",
        "| what | result |",
        "|---|---|",
        f"| wordllama, in process (batches of 256) | {e['wordllama']:,.0f} texts/s "
        f"(model load {e['wordllama_load_s'] * 1000:.0f} ms) |",
        f"| openai embedder against the local fake endpoint (batches of 256) | {e['openai_fake']:,.0f} texts/s |",
        f"| fastembed on the tiny test model (batches of 256) | {e['fastembed_tiny']:,.0f} texts/s |",
        f"| AMEM.SEM.STORE by text, every text embedded (4 clients, -P 100) | {s['store_text_cold']:,.0f} stores/s |",
        f"| AMEM.SEM.STORE by text, every text in the cache (4 clients, -P 100) | {s['store_text_cached']:,.0f} stores/s |",
        f"| AMEM.SEM.RECALL ... TEXT, 1 client unpipelined | {s['recall_text_1client']:,.0f} recalls/s |",
        f"| AMEM.SEM.RECALL ... TEXT, 4 clients -P 32 | {s['recall_text_4clients_p32']:,.0f} recalls/s |",
        f"| GET p50 / p99 from 2 other clients, idle | {lat['idle_p50_ms']:.3f} / {lat['idle_p99_ms']:.3f} ms |",
        f"| GET p50 / p99 during a bulk store by text ({lat['bulk_stores_per_s']:,.0f} stores/s) | "
        f"{lat['busy_p50_ms']:.3f} / {lat['busy_p99_ms']:.3f} ms |",
        f"| p99 busy / idle (target <= 2) | {lat['p99_ratio']:.2f} "
        f"{'met' if lat['p99_ratio'] <= 2 else '**not met**'} |",
        "",
        f"recall@5 on {q['questions']} questions over {q['facts']} facts (benchmarks/data):",
        "",
        "| method | recall@5 |",
        "|---|---|",
        f"| BM25 (AMEM.SEM.SEARCH, namespace without an embedder) | {q['bm25']:.2f} |",
        f"| wordllama (AMEM.SEM.RECALL ... TEXT) | {q['wordllama']:.2f} |",
        f"| hybrid RRF (AMEM.SEM.SEARCH on the wordllama namespace) | {q['hybrid_rrf']:.2f} |",
        f"| hybrid LINEAR, alpha 0.7 | {q['hybrid_linear']:.2f} |",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small counts: a smoke run")
    parser.add_argument("--json", help="write the report here too")
    args = parser.parse_args(argv)
    n = 2000 if args.quick else 20_000
    report: dict[str, Any] = {"machine": machine()}
    report["embedders"] = bench_embedders(n)
    server = Server()
    try:
        report["server"] = bench_server(server, n // 2)
        report["latency"] = bench_latency(server, 1.0 if args.quick else 5.0)
        report["quality"] = bench_quality(server)
    finally:
        server.close()
    print(table(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
