"""The import graph of src/hotkv_server follows docs/architecture.md: imports run one way
(server -> engine <- commands, persistence, replication; stores at the bottom) and no
module imports itself back through others, ``TYPE_CHECKING`` imports included.

Read from the source (ast), so an import inside a function or an ``if TYPE_CHECKING``
block counts like any other.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "hotkv_server"

#: package -> the packages its modules may import ("" is hotkv_server/__init__ itself)
ALLOWED: dict[str, set[str]] = {
    "stores": {"stores"},
    "engine": {"engine", "stores", ""},
    "commands": {"commands", "engine", "stores", "scripting", ""},
    # the Lua engine behind EVAL/EVALSHA/SCRIPT: a library of the command layer
    "scripting": {"scripting", "engine", "stores", ""},
    "persistence": {"persistence", "engine", "stores"},
    "replication": {"replication", "engine", "stores"},
    # the embedders, their worker pool and cache (a subsystem; commands reach it through
    # engine.services.EmbeddingService)
    "embedding": {"embedding", "engine"},
    # cluster mode (a subsystem) and its operator tool; persistence for fsutil's atomic write
    "cluster": {"cluster", "engine", "stores", "persistence"},
    # the process: it builds the engine, loads the commands and the subsystems
    "server": {"server", "engine", "stores", "commands", "persistence", "replication", "cluster",
               "embedding", ""},
    # the client library and the MCP server talk to a server over the network
    "clients": {"clients", "engine", ""},
}


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in SRC.rglob("*.py"):
        parts = ["hotkv_server", *path.relative_to(SRC).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(path: Path) -> set[str]:
    """The hotkv_server modules one file imports (``from pkg import submodule`` names the
    submodule)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if not node.module.startswith("hotkv_server"):
                continue
            subs = {f"{node.module}.{a.name}" for a in node.names} & MODULES.keys()
            found |= subs
            if len(subs) < len(node.names) and node.module in MODULES:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in MODULES}
    return found


GRAPH = {name: _imports(path) for name, path in MODULES.items()}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and (SRC / parts[1]).is_dir()) else ""


def test_the_graph_is_read() -> None:
    # the checks below mean something only if the walk found the tree and its imports
    assert "hotkv_server.engine.dispatch" in GRAPH
    assert "hotkv_server.engine.registry" in GRAPH["hotkv_server.engine.dispatch"]


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_run_one_way(package: str) -> None:
    wrong = sorted(
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        if _package(module) == package
        for target in targets
        if _package(target) not in ALLOWED[package]
    )
    assert not wrong, "\n".join(wrong)


def test_every_package_has_a_rule() -> None:
    packages = {_package(m) for m in MODULES} - {""}
    assert packages <= ALLOWED.keys(), packages - ALLOWED.keys()


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in GRAPH[node]:
            if nxt == node:
                continue
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in GRAPH:
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles() -> None:
    assert _cycles() == []


def test_a_cycle_would_be_found() -> None:
    # the detector itself: a two-module loop added to a copy of the graph is reported
    saved = dict(GRAPH)
    try:
        GRAPH["hotkv_server.stores.effect"] = {*GRAPH["hotkv_server.stores.effect"],
                                               "hotkv_server.stores.keyspace_effects"}
        assert _cycles() == [["hotkv_server.stores.effect", "hotkv_server.stores.keyspace_effects"]]
    finally:
        GRAPH.clear()
        GRAPH.update(saved)



def _source_lines(pattern: str, allowed: set[str]) -> list[str]:
    """``file:line: text`` of every source line matching ``pattern``, but in ``allowed``."""
    found = re.compile(pattern)
    return [f"{path.relative_to(SRC)}:{number}: {line.strip()}"
            for path in sorted(SRC.rglob("*.py")) if str(path.relative_to(SRC)) not in allowed
            for number, line in enumerate(path.read_text().splitlines(), start=1)
            if found.search(line)]


def test_core_has_no_untyped_bag_of_services() -> None:
    # every service the subsystems share is a typed field of Core (engine/core.py), none
    # a string key of a dict
    from hotkv_server.engine.core import Core

    assert not hasattr(Core(), "extras")
    assert _source_lines(r"\.extras\b", set()) == []


def test_directives_are_read_by_their_typed_attribute() -> None:
    # ``config.maxmemory`` (engine/settings.py), never ``config.values["maxmemory"]``: the
    # by-name view is for code that handles any directive, inside engine/config.py
    assert _source_lines(r"config\.values\b", {"engine/config.py"}) == []
