"""A type checker sees every AMEM method of the asyncio client with the synchronous
client's parameters and an ``Awaitable`` of its return type (both derived from the one
definition in ``clients/commands.py``), and the package ships its type information."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import mypy.api
import pytest

import hotkv_server as hotkv
from hotkv_server.asyncio import Hotkv as AsyncHotkv
from hotkv_server.clients.commands import AmemCommands

AMEM_METHODS = sorted(name for name in vars(AmemCommands) if name.startswith("amem_"))


def test_asyncio_client_runs_the_sync_methods() -> None:
    assert len(AMEM_METHODS) > 30
    for name in AMEM_METHODS:
        assert getattr(AsyncHotkv, name) is getattr(AmemCommands, name), name


def test_type_checker_sees_awaitables_of_the_sync_signatures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probe = tmp_path / "probe.py"
    lines = ["from hotkv_server import Hotkv",
             "from hotkv_server.asyncio import Hotkv as AsyncHotkv",
             "def probe(sync: Hotkv, aio: AsyncHotkv) -> None:"]
    for name in AMEM_METHODS:
        lines += [f"    reveal_type(sync.{name})", f"    reveal_type(aio.{name})",
                  f"    reveal_type(aio.pipeline().{name})"]
    probe.write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("MYPYPATH", str(Path(inspect.getfile(hotkv)).parents[1]))
    out, err, _ = mypy.api.run([str(probe), "--cache-dir", str(tmp_path / "cache"),
                                "--no-error-summary"])
    revealed = re.findall(r'Revealed type is "(.*)"', out)
    assert len(revealed) == 3 * len(AMEM_METHODS), out + err
    for i, name in enumerate(AMEM_METHODS):
        sync, aio, pipeline = revealed[3 * i : 3 * i + 3]
        params, _, returns = sync.rpartition(" -> ")
        assert params.startswith("def ("), (name, sync)
        assert aio == f"{params} -> typing.Awaitable[{returns}]", name
        assert pipeline == sync, name  # a pipeline's methods queue: typed as before


def test_package_is_typed_and_exports_the_client() -> None:
    assert (Path(inspect.getfile(hotkv)).parent / "py.typed").exists()
    for name in hotkv.__all__:
        assert getattr(hotkv, name) is not None
    assert issubclass(hotkv.NotFound, hotkv.AmemError)
    assert hotkv.__version__
