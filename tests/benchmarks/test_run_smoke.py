"""The benchmark harness runs end to end: servers start, redis-benchmark runs, a ratio row comes out.

Not a performance test: nothing here depends on how fast either server is.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import require_tool

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "benchmarks" / "run.py"

@pytest.fixture(autouse=True)
def _tools() -> None:
    require_tool("redis-server")
    require_tool("redis-benchmark")

# | PING_INLINE | 1 | 71,429 | 96,154 / 96,154 / 96,154 | 1.35 | >= 0.80 | ok | 1.35 |
RATIO_ROW = re.compile(
    r"^\| (PING_INLINE|PING_MBULK) \| (1|16) \| [\d,]+ \| [\d,]+ / [\d,]+ / [\d,]+ "
    r"\| (\d+\.\d\d) \| >= (0\.\d\d) \| (ok|BELOW TARGET) \| \d+\.\d\d \|$",
    re.MULTILINE,
)


@pytest.mark.slow
def test_quick_ping_rows_give_ratios(tmp_path: Path) -> None:
    out_json = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, str(RUN), "--quick", "--rows", "ping", "--json", str(out_json)],
        capture_output=True, text=True, timeout=90, cwd=ROOT, check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = RATIO_ROW.findall(done.stdout)
    assert {(name, p) for name, p, *_ in rows} == {
        ("PING_INLINE", "1"), ("PING_INLINE", "16"), ("PING_MBULK", "1"), ("PING_MBULK", "16"),
    }, done.stdout
    assert {target for *_, target, _verdict in rows} == {"0.80", "0.45"}
    assert "Command: `benchmarks/run.py --quick --rows ping" in done.stdout

    data = json.loads(out_json.read_text())
    assert [(r["row"], r["pipeline"]) for r in data["results"]] == [
        ("ping_inline", 1), ("ping_inline", 16), ("ping_mbulk", 1), ("ping_mbulk", 16),
    ]
    for result in data["results"]:
        assert len(result["redis"]) == 1 and len(result["hotkv"]) == 1
        assert result["ratio"] == pytest.approx(result["hotkv"][0] / result["redis"][0])


def test_unknown_row_name_is_refused() -> None:
    done = subprocess.run(
        [sys.executable, str(RUN), "--quick", "--rows", "nosuchrow"],
        capture_output=True, text=True, timeout=30, cwd=ROOT, check=False,
    )
    assert done.returncode != 0
    assert "matches no row" in done.stderr
    assert "ping_inline" in done.stderr


def _load_run_module() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_run", RUN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_row_with_an_unknown_command_is_skipped_with_a_note(tmp_path: Path) -> None:
    run = _load_run_module()
    server = run.start_hotkv(tmp_path, "no", None, sys.executable, [])
    try:
        row = run.Row("nope", "amem", "AMEM.NOPE vs HSET", ("HSET", "h", "f", "v"),
                      ("AMEM.NOPE", "s", "k"), probe=(b"AMEM.NOPE", b"s", b"k"))
        settings = run.Settings(1, 1.0, True, "redis-benchmark", None, [1, 16], lambda _: None)
        results = run.measure(row, [server], settings)
    finally:
        server.stop()
    assert [(r.pipeline, r.note) for r in results] == [
        (p, "skipped: AMEM.NOPE is not implemented in hotkv yet (unknown command)") for p in (1, 16)
    ]
    assert all(r.ratio is None and not r.hotkv for r in results)
    table = run.format_table(results)
    assert "| AMEM.NOPE vs HSET | 16 | | | | >= 0.45 | skipped: AMEM.NOPE is not implemented" in table


@pytest.mark.slow
def test_quick_aof_fakeredis_and_sem_rows(tmp_path: Path) -> None:
    import fakeredis  # noqa: F401 - the bench extra, which scripts/test installs
    import matplotlib  # noqa: F401
    out_json = tmp_path / "bench.json"
    png = tmp_path / "curve.png"
    done = subprocess.run(
        [sys.executable, str(RUN), "--quick", "--rows", "aof_get,fakeredis_set,sem",
         "--pipelines", "1", "--facts", "300", "--sem-cache", str(tmp_path / "cache"),
         "--png", str(png), "--json", str(out_json)],
        capture_output=True, text=True, timeout=240, cwd=ROOT, check=False,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(out_json.read_text())
    assert [(r["row"], r["group"]) for r in data["results"]] == [
        ("aof_get", "aof"), ("fakeredis_set", "fakeredis")]
    for result in data["results"]:
        assert len(result["ratios"]) == 1 and result["ratios"][0] > 0
    assert "| hotkv without AOF req/s (median) |" in done.stdout
    assert "| fakeredis req/s (median) |" in done.stdout
    titles = [row["title"] for row in data["sem"]["rows"]]
    assert any("8 clients vs 1 client" in t for t in titles)
    assert any("restart from the base snapshot" in t for t in titles)
    assert data["sem"]["curve_hotkv"]["64"]["recall"] > 0.9
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Every ratio (min / median / max" in done.stdout


def test_inprocess_harness_measures_every_row() -> None:
    """benchmarks/inprocess.py drives the real request path with the subsystems attached
    (AOF on, two clients per turn) and prints one row per command; it stops with an error
    when the server answers one."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "inprocess.py"), "--aof", "--clients", "2",
         "--commands", "2000", "--repeat", "1", "--keys", "50"],
        capture_output=True, text=True, timeout=120, cwd=ROOT, check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = re.findall(r"^\| (\w+) \| (\d+\.\d\d) us \| (\d+\.\d\d) us \|$", done.stdout, re.MULTILINE)
    assert [r[0] for r in rows] == ["ping", "ping_inline", "set", "get", "wset", "wget", "capp",
                                    "hset", "hget", "sadd", "lpush", "lrange_100", "zrange", "zrange_100",
                                    "zadd",
                                    "zrangebyscore", "evalsha", "zscore", "zincrby",
                                    "hset_r", "hget_r", "sadd_r"]
    assert all(float(p16) > 0 and float(p1) > 0 for _, p16, p1 in rows)
