"""benchmarks/agent_turn.py and benchmarks/growth.py run end to end on tiny data.

Not performance tests: they check that both servers start, every step of the turn and
every data set is accepted by both, and the reports carry the fields the README quotes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import require_tool

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # two servers each, and a fork and restart: ~1 minute each


@pytest.fixture(autouse=True)
def _tools() -> None:
    require_tool("redis-server")


def run(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_agent_turn_runs_both_servers(tmp_path: Path) -> None:
    out = tmp_path / "turn.json"
    done = run([str(ROOT / "benchmarks" / "agent_turn.py"), "--facts", "300", "--dim", "16",
                "--sessions", "40", "--agents", "1,2", "--seconds", "1", "--cache",
                str(tmp_path / "cache"), "--json", str(out), "--png", str(tmp_path / "t.png")],
               timeout=240)
    result = json.loads(out.read_text())
    rows = {(r["server"], r["agents"]): r for r in result["rows"]}
    assert set(rows) == {("hotkv", 1), ("hotkv", 2), ("redis", 1), ("redis", 2)}
    for row in rows.values():
        assert row["turns"] > 0 and row["p50_ms"] <= row["p99_ms"] <= row["p999_ms"]
    assert 0.0 <= result["hotkv_recall_at_3"] <= 1.0
    assert (tmp_path / "t.png").stat().st_size > 0
    assert "| 2 | redis |" in done.stdout


def test_growth_memory_and_rewrite(tmp_path: Path) -> None:
    out = tmp_path / "growth.json"
    run([str(ROOT / "benchmarks" / "growth.py"), "--parts", "memory,rewrite", "--scale",
         "0.005", "--dim", "16", "--objects", "2000", "--json", str(out)], timeout=300)
    result = json.loads(out.read_text())
    names = [row["data"] for row in result["memory"]]
    assert len(names) == 11 and any(n.startswith("AMEM.SEM") for n in names)
    for row in result["memory"]:
        assert row["objects"] > 0 and row["raw_per_object"] > 0
    big = result["big"]
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import growth

    # every key of the base and of the writes after the rewrite (replayed from the AOF)
    # is back after the restart
    writes = [*growth.mixed(2000), *growth.mixed(200, offset=2000)]
    keys = {argv[1] for argv in writes if argv[0] in ("SET", "HSET")}
    assert big["hotkv_dbsize_after"] == len(keys)
    redis_keys = {argv[1] for argv in [*growth.mixed_redis(2000),
                                       *growth.mixed_redis(200, offset=2000)]}
    assert big["redis_dbsize_after"] == len(redis_keys)
    for kind in ("hotkv", "redis"):
        assert big[f"{kind}_rewrite_ping_stall_ms"] > 0
        assert big[f"{kind}_restart_s"] > 0
