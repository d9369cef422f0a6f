"""hotkv: an in-memory Redis-protocol server that gives AI agents their memory."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hotkv_server import _compiled

__version__ = "0.1.0"

# the compiled hot path runs only if it was built from the sources as they are now (and
# HOTKV_PURE is not set); otherwise the listed modules load from their .py files
_compiled.activate()

if TYPE_CHECKING:
    from hotkv_server.clients import (
        AmemError,
        Conflict,
        DimensionError,
        Exists,
        Full,
        Hotkv,
        NotFound,
        Pipeline,
        from_fp32,
        from_url,
        to_fp32,
    )

__all__ = [
    "AmemError",
    "Conflict",
    "DimensionError",
    "Exists",
    "Full",
    "Hotkv",
    "NotFound",
    "Pipeline",
    "__version__",
    "from_fp32",
    "from_url",
    "to_fp32",
]


def __getattr__(name: str) -> Any:
    # The client (redis-py, numpy) is imported on first use, so the server's start-up
    # and ``from hotkv import __version__`` do not pay for it.
    if name in __all__:
        import hotkv_server.clients

        return getattr(hotkv_server.clients, name)
    raise AttributeError(f"module 'hotkv_server' has no attribute {name!r}")


def __dir__() -> list[str]:
    # the lazy names above are attributes too: dir(hotkv_server) and REPL completion show them
    return sorted(set(globals()) | set(__all__))
