"""The Python examples of README.md, docs/quickstart.md, docs/agent-turn.md and
docs/retention.md run as written against a real server (the model, the embedding and the
prompt are stubs), and the README's tour and the quickstart's redis-cli transcript answer as
printed. The README's and the quickstart's official-client examples use the official
hotkv-client package (module ``hotkv``), installed by the test extra."""

from __future__ import annotations

import asyncio
import re
import shlex
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import hotkv as official
import numpy as np
import pytest
import redis

import hotkv_server as hotkv
from helpers import ROOT, HotkvProcess, require_tool
from hotkv_server.clients.embedding import hashed_embedding

DOCS = ROOT / "docs"
BLOCK = re.compile(r"^( *)```python\n(.*?)^\1```", re.S | re.M)


def python_blocks(doc: Path) -> list[str]:
    return [textwrap.dedent(body) for _, body in BLOCK.findall(doc.read_text())]


def stubs(url: str) -> dict[str, Any]:
    def embed(text: str) -> np.ndarray:
        return hashed_embedding(text, 64)

    def build_prompt(**parts: Any) -> str:
        return repr(parts)

    def call_model(prompt: str) -> tuple[str, list[str]]:
        return f"answer to {len(prompt)} characters", ["search"]

    def summarise(previous: str, lines: list[str]) -> str:
        return "\n".join([previous, *lines]).strip()

    return {"embed": embed, "build_prompt": build_prompt, "call_model": call_model,
            "summarise": summarise, "__name__": "docs_example"}


def run(block: str, scope: dict[str, Any], url: str) -> None:
    """exec a doc example, pointed at the test server instead of localhost:6379."""
    assert "hotkv://localhost:6379" in block or "from_url" not in block
    exec(block.replace("hotkv://localhost:6379", url), scope)


@pytest.fixture
def url(server: HotkvProcess) -> str:
    client = server.client()
    client.flushall()
    client.close()
    return f"hotkv://127.0.0.1:{server.port}"


def test_agent_turn_and_retention(url: str) -> None:
    scope = stubs(url)
    setup = hotkv.from_url(url)
    setup.amem_sem_create("support-kb", 64)
    setup.amem_sem_store("support-kb", "/refunds", "refunds take five days",
                         hashed_embedding("refunds take five days", 64))
    blocks = python_blocks(DOCS / "agent-turn.md")
    assert len(blocks) == 3
    run(blocks[0], scope, url)  # start() and turn()
    scope["start"]("session-1")
    scope["start"]("session-1")  # a second start is harmless
    answer = scope["turn"]("session-1", "how long do refunds take")
    assert answer.startswith("answer to")
    scope["turn"]("session-1", "and for the team plan?")
    scope["session"] = "session-1"
    run(blocks[1], scope, url)  # learning a fact
    run(blocks[2], scope, url)  # refresh_summary()
    scope["refresh_summary"]()

    assert setup.amem_conv_len("session-1") == 4
    turns = setup.amem_conv_window("session-1")
    assert turns[1]["meta"] == {"tools": ["search"]}
    assert setup.amem_work_get("session-1", "turns") == "2"
    summary = setup.amem_summary_get("agent-support")
    events = setup.amem_epis_query("agent-support")
    assert summary is not None and summary["upto"] == events[-1]["id"] and summary["version"] == 1
    scope["refresh_summary"]()  # nothing new: unchanged
    assert setup.amem_summary_get("agent-support")["version"] == 1  # type: ignore[index]
    assert setup.amem_sem_get("support-kb", "/customers/c-17/plan") is not None

    (trim,) = python_blocks(DOCS / "retention.md")
    scope.update(r=setup, agent="agent-support")
    run(trim, scope, url)
    assert [e["id"] for e in setup.amem_epis_query("agent-support")] == [events[-1]["id"]]
    setup.close()


def test_quickstart_client_examples(url: str) -> None:
    scope = stubs(url)
    setup = hotkv.from_url(url)
    setup.amem_sem_create("support-kb", 64)
    setup.amem_sem_store("support-kb", "a", "Why was I charged twice?",
                         hashed_embedding("Why was I charged twice?", 64))
    scope.update(session="s-1", question="Why was I charged twice?", agent="agent-support",
                 answer="A duplicate authorisation; it disappears in 3 days.")
    blocks = python_blocks(DOCS / "quickstart.md")
    (plain,) = [b for b in blocks if "execute_command" in b]
    port = url.rsplit(":", 1)[1]
    exec(plain.replace('host="localhost", port=6379', f'host="127.0.0.1", port={port}'), scope)
    assert scope["turns"][0][b"content"] == b"Why was I charged twice?"
    assert isinstance(scope["hits"], list)
    setup.amem_conv_del("session-42")
    client_blocks = [b for b in blocks if "amem_" in b]
    official_block, snippet, pipeline, asyncio_block = client_blocks
    assert "import hotkv\n" in official_block
    setup.amem_work_set("s-1", "ticket", "T-1")
    run(official_block, scope, url)
    assert isinstance(scope["r"], official.HotKV)
    assert [f["id"] for f in scope["facts"]] == [b"a"]
    assert scope["turns"][0]["content"] == b"Why was I charged twice?"
    assert scope["ticket"] == b"T-1" and scope["version"] == 0
    setup.amem_conv_del("s-1")
    setup.amem_work_clear("s-1")
    run(snippet, scope, url)
    assert isinstance(scope["r"], hotkv.Hotkv) and scope["seq"] == 1
    assert [f["id"] for f in scope["facts"]] == ["a"]
    assert scope["turns"][0]["content"] == "Why was I charged twice?"
    run(pipeline, scope, url)
    assert scope["seq"] == 2 and scope["turns_so_far"] == "1"
    body = "async def _example():\n" + textwrap.indent(asyncio_block, "    ") + \
        "\n    return turns, length, notes\n"
    run(body, scope, url)
    turns, length, notes = asyncio.run(scope["_example"]())
    assert length == 2 and notes == {"last_step": "answered", "turns": "1"}
    assert [t["seq"] for t in turns] == [1, 2]
    setup.close()


def test_quickstart_redis_cli_transcript(url: str) -> None:
    """Each ``$ redis-cli ...`` of the quickstart, run against the server, prints what the
    doc shows (millisecond times and event ids, which differ per run, aside)."""
    cli = require_tool("redis-cli")
    port = url.rsplit(":", 1)[1]
    text = (DOCS / "quickstart.md").read_text()
    transcript = text.split("## redis-cli\n\n```text\n", 1)[1].split("```", 1)[0]
    steps = re.split(r"^\$ ", transcript, flags=re.M)[1:]
    assert len(steps) == 13
    assert "(error) NOTFOUND session not found" in transcript

    def normal(output: str) -> str:
        return re.sub(r"\b\d{13}\b", "<ms>", output).strip()

    for step in steps:
        command, _, expected = step.partition("\n")
        argv = shlex.split(command)
        assert argv[0] == "redis-cli"
        # --no-raw: the formatting redis-cli uses on a terminal, as the doc shows it
        done = subprocess.run([cli, "-p", port, "--no-raw", *argv[1:]], capture_output=True,
                              text=True, timeout=10, check=True)
        assert normal(done.stdout) == normal(expected), command


def test_readme_tour_and_python_examples(url: str) -> None:
    """The README in order, as a new user runs it: the redis-cli tour, then the redis-py and
    the official-client blocks (``embed`` is the stub model, of the tour's dimension 3)."""
    cli = require_tool("redis-cli")
    port = url.rsplit(":", 1)[1]
    text = (ROOT / "README.md").read_text()
    tour = text.split("With redis-cli:\n\n```text\n", 1)[1].split("```", 1)[0]
    prompts = [line.split("> ", 1)[1] for line in tour.splitlines() if line.startswith("127.0.0.1:6379> ")]
    assert len(prompts) == 11
    for line in prompts:
        done = subprocess.run([cli, "-p", port, "--no-raw", *shlex.split(line)], capture_output=True,
                              text=True, timeout=10, check=True)
        shown = tour.split(line + "\n", 1)[1].splitlines()[0]
        if shown in ("OK", "(integer) 1"):
            assert done.stdout.strip() == shown, line
    blocks = python_blocks(ROOT / "README.md")
    assert len(blocks) == 2
    plain, turn = blocks
    exec(plain.replace('host="localhost", port=6379', f'host="127.0.0.1", port={port}'),
         {"__name__": "readme"})
    scope: dict[str, Any] = {"embed": lambda text: [0.1, 0.2, 0.3], "__name__": "readme"}
    check = redis.Redis(port=int(port), protocol=3)
    check.execute_command("AMEM.WORK.SET", "session-43", "ticket", "INV-1932")
    run(turn, scope, url)
    assert [f["id"] for f in scope["facts"]] == [b"vat-policy"]
    assert scope["ticket"] == b"INV-1932"
    assert [t["role"] for t in scope["turns"]] == [b"user"]
    assert check.execute_command("AMEM.WORK.GET", "session-43", "last_step") == b"answered"
    assert len(check.execute_command("AMEM.CONV.WINDOW", "session-42")) == 2  # the tour's + redis-py's
    check.close()
