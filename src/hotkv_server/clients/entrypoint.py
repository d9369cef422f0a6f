"""``python -m hotkv_server.clients.entrypoint``: the container's entry point.

It runs ``hotkv-server`` (replacing itself, so the server is PID 1 and gets the stop
signal) with the container defaults, then every ``HOTKV_<DIRECTIVE>`` environment
variable as ``--<directive> value`` (``HOTKV_APPENDFSYNC=always`` -> ``--appendfsync
always``, ``HOTKV_MAXMEMORY=1gb``, ``HOTKV_REQUIREPASS`` ...; a value of several words,
as ``HOTKV_BIND="0.0.0.0 ::"``, gives several values), then its own arguments: later
ones win, so ``docker run IMAGE --appendfsync always`` overrides the environment.
Environment variables that name no directive (``HOTKV_URL`` of the clients) are left
alone. ``--print`` shows the command line instead of running it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

from hotkv_server.engine.config import DIRECTIVES

#: the container's defaults: listen on every interface, keep data in the /data volume
CONTAINER_DEFAULTS: tuple[str, ...] = ("--bind", "0.0.0.0", "--dir", "/data",
                                       "--protected-mode", "no")
ENV_PREFIX = "HOTKV_"


def server_arguments(argv: Sequence[str], environ: Mapping[str, str]) -> list[str]:
    """The hotkv-server arguments: defaults, then the environment, then ``argv``."""
    args = list(CONTAINER_DEFAULTS)
    for name in sorted(environ):
        if not name.startswith(ENV_PREFIX):
            continue
        directive = name[len(ENV_PREFIX):].lower().replace("_", "-")
        if directive in DIRECTIVES:
            values = environ[name].split() or [environ[name]]
            args += [f"--{directive}", *values]
    return args + list(argv)


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    show_only = "--print" in given
    if show_only:
        given.remove("--print")
    command = [sys.executable, "-m", "hotkv_server", *server_arguments(given, os.environ)]
    if show_only:
        print(" ".join(command))
        return 0
    sys.stdout.flush()
    os.execv(sys.executable, command)
    return 1  # not reached: execv replaces the process


if __name__ == "__main__":
    sys.exit(main())
