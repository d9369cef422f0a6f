"""The asyncio client's static types (a Protocol of awaitable methods) match the methods it
runs, and the package ships its type information."""

from __future__ import annotations

import inspect
from pathlib import Path

import hotkv_server as hotkv
from hotkv_server.clients._async_types import AsyncAmemCommands
from hotkv_server.clients.commands import AmemCommands


def amem_methods(cls: type) -> dict[str, inspect.Signature]:
    return {name: inspect.signature(fn) for name, fn in vars(cls).items()
            if name.startswith("amem_") and callable(fn)}


def test_async_protocol_mirrors_the_sync_methods() -> None:
    sync, typed = amem_methods(AmemCommands), amem_methods(AsyncAmemCommands)
    assert sorted(typed) == sorted(sync)
    for name, signature in sync.items():
        mirrored = typed[name]
        assert mirrored.parameters == signature.parameters, name
        assert mirrored.return_annotation == f"Awaitable[{signature.return_annotation}]", name


def test_package_is_typed_and_exports_the_client() -> None:
    assert (Path(inspect.getfile(hotkv)).parent / "py.typed").exists()
    for name in hotkv.__all__:
        assert getattr(hotkv, name) is not None
    assert issubclass(hotkv.NotFound, hotkv.AmemError)
    assert hotkv.__version__
