"""``python -m hotkv_server.clients.entrypoint``: the container's entry point.

It runs ``hotkv-server`` (replacing itself, so the server is PID 1 and gets the stop
signal) with the container defaults, then every ``HOTKV_<DIRECTIVE>`` environment
variable as ``--<directive> value`` (``HOTKV_APPENDFSYNC=always`` -> ``--appendfsync
always``, ``HOTKV_MAXMEMORY=1gb``, ``HOTKV_REQUIREPASS`` ...; a value of several words,
as ``HOTKV_BIND="0.0.0.0 ::"``, gives several values), then its own arguments: later
ones win, so ``docker run IMAGE --appendfsync always`` overrides the environment.
Environment variables that name no directive (``HOTKV_URL`` of the clients) are left
alone. ``--print`` shows the command line instead of running it.

**Never open by accident.** The image listens on every interface, so it needs a password:
``HOTKV_REQUIREPASS``, or ``HOTKV_REQUIREPASS_FILE`` naming a file that holds it (a Docker
or Kubernetes secret, ``/run/secrets/...``), or ``--requirepass``, or an ``aclfile``.
Without one it starts only if it listens on the loopback only (``HOTKV_BIND=127.0.0.1``,
the sidecar set-up, where nothing outside the pod can connect) or if protected mode was
turned off on purpose (``HOTKV_PROTECTED_MODE=no``); otherwise it refuses to start and
says how to set a password (exit status 1).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

from hotkv_server.engine.config import DIRECTIVES

#: the container's defaults: listen on every interface, keep data in the /data volume
CONTAINER_DEFAULTS: tuple[str, ...] = ("--bind", "0.0.0.0", "--dir", "/data")
ENV_PREFIX = "HOTKV_"
PASSWORD_FILE_ENV = "HOTKV_REQUIREPASS_FILE"
_LOOPBACK = ("127.", "::1", "localhost")


class EntrypointError(Exception):
    """The container must not start this way; the message says what to set."""


def password_from_file(environ: Mapping[str, str]) -> str | None:
    """The password in the file ``HOTKV_REQUIREPASS_FILE`` names (trailing newline
    dropped), None when it is not set; EntrypointError if it cannot be used."""
    path = environ.get(PASSWORD_FILE_ENV)
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            password = fh.read().rstrip("\r\n")
    except OSError as exc:
        raise EntrypointError(f"{PASSWORD_FILE_ENV}: cannot read {path}: {exc.strerror or exc}") from None
    if not password:
        raise EntrypointError(f"{PASSWORD_FILE_ENV}: {path} is empty")
    return password


def _last(args: Sequence[str], directive: str) -> list[str] | None:
    """The values of the last ``--directive`` in ``args`` (as the server reads them)."""
    found: list[str] | None = None
    flag = f"--{directive}"
    for i, arg in enumerate(args):
        if arg == flag:
            values = []
            for value in args[i + 1:]:
                if value.startswith("--"):
                    break
                values.append(value)
            found = values
    return found


def refuse_open(args: Sequence[str]) -> str | None:
    """Why these server arguments would serve the network without a password, or None."""
    password = _last(args, "requirepass")
    if password and password[0]:
        return None
    if _last(args, "aclfile"):
        return None  # the ACL file sets the users and their passwords
    binds = _last(args, "bind") or []
    if binds and all(b.lstrip("-").startswith(_LOOPBACK) for b in binds):
        return None  # a sidecar: only its own pod can connect
    protected = _last(args, "protected-mode")
    if protected and protected[0].lower() in ("no", "false", "0"):
        return None  # open on purpose
    return (f"refusing to start without a password while listening on {' '.join(binds) or 'every interface'}: "
            "set HOTKV_REQUIREPASS, or HOTKV_REQUIREPASS_FILE=/run/secrets/<name> (a file holding "
            "the password), or listen on the loopback only (HOTKV_BIND=127.0.0.1, a sidecar); "
            "HOTKV_PROTECTED_MODE=no serves everyone without a password")


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
    from_file = password_from_file(environ)
    if from_file is not None:
        args += ["--requirepass", from_file]
    return args + list(argv)


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    show_only = "--print" in given
    if show_only:
        given.remove("--print")
    try:
        args = server_arguments(given, os.environ)
        problem = refuse_open(args)
        if problem is not None:
            raise EntrypointError(problem)
    except EntrypointError as exc:
        print(f"hotkv container: {exc}", file=sys.stderr)
        return 1
    command = [sys.executable, "-m", "hotkv_server", *args]
    if show_only:
        print(" ".join(command))
        return 0
    sys.stdout.flush()
    os.execv(sys.executable, command)
    return 1  # not reached: execv replaces the process


if __name__ == "__main__":
    sys.exit(main())
