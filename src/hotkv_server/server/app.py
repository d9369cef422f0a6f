"""The Server: start, serve, background tasks (expiry, client timeouts), shutdown.

``hotkv-server [config-file] [--directive value ...]`` and ``python -m hotkv_server`` both end in
``main()``. Subsystems (persistence, replication, ACL, TLS) plug in through ``Server.start``.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import signal
import socket
import ssl
import sys
import time
from typing import Any

from hotkv_server import __version__, _compiled
from hotkv_server.commands import load_all
from hotkv_server.engine.clock import Clock
from hotkv_server.engine.config import Config, ConfigError, load_config
from hotkv_server.engine.core import Core, Subsystem
from hotkv_server.engine.errors import StartupError
from hotkv_server.server.blas import limit_blas_threads
from hotkv_server.server.connection import ClientProtocol
from hotkv_server.server.rebind import Rebinder

__all__ = ["Server", "StartupError", "main"]

log = logging.getLogger("hotkv")

#: at most this much of each expiry cycle is spent purging (ms), as Redis bounds its cycle
EXPIRE_CYCLE_BUDGET_MS = 25
EXPIRE_BATCH = 200


class Server:
    """One hotkv server process's lifecycle around a Core."""

    def __init__(self, config: Config, clock: Clock | None = None) -> None:
        load_all()
        self.config = config
        self.core = Core(config, clock)
        self.core.shutdown_requested = self.request_shutdown
        self.listeners: list[asyncio.base_events.Server] = []
        self.tasks: list[asyncio.Task[Any]] = []
        self.stopping: asyncio.Event | None = None
        self.save_on_shutdown: bool | None = None
        self.ports: list[int] = []
        #: CONFIG SET port/bind/tls-*: listens anew (server/rebind.py)
        self.rebinder = Rebinder(self)
        self.core.attach(self.rebinder)

    @property
    def subsystems(self) -> list[Subsystem]:
        """The attached subsystems, in order (``core.subsystems``)."""
        return self.core.subsystems

    # --- start --------------------------------------------------------------------
    async def start(self) -> None:
        self.stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        await self._open_subsystems()
        await self._listen(loop)
        self.tasks.append(asyncio.create_task(self._cron(), name="hotkv-cron"))
        for sub in list(self.core.subsystems):
            await sub.started()
        tls = self.core.tls_port
        # which build of the hot path runs (hotkv_server._compiled; scripts/build_compiled.py)
        log.info("hot path: %s", _compiled.STATE)
        log.info(
            "hotkv %s ready to accept connections on %s port %s%s (pid %d, config %s, dir %s)",
            __version__,
            " ".join(self.config.bind),
            self.core.tcp_port,
            f" tls-port {tls}" if tls else "",
            os.getpid(),
            os.path.abspath(self.config.path) if self.config.path else "none",
            # relative paths are the start directory's: say which directory that made it
            os.path.abspath(self.config.dir),
        )

    async def _open_subsystems(self) -> None:
        """Persistence, replication, ACL ... each optional module attaches itself here."""
        import importlib

        if not limit_blas_threads(1):  # (sem_service's threads need the cores; see blas.py)
            log.debug("no OpenBLAS found to hold to one thread")
        for module_name in (
            "hotkv_server.commands.acl",
            "hotkv_server.persistence",
            "hotkv_server.replication",
            "hotkv_server.server.memory",
            "hotkv_server.server.client_memory",
            "hotkv_server.commands.sem_service",  # RECALL's threads, the recall self-check
            "hotkv_server.embedding",  # the embedders, their worker pool and cache
            "hotkv_server.cluster",
        ):
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError as exc:
                if exc.name == module_name:
                    continue
                raise
            attach = getattr(module, "attach", None)
            if attach is None:
                continue
            sub = attach(self)
            if asyncio.iscoroutine(sub):
                sub = await sub
            if sub is not None:
                self.core.attach(sub)

    async def _listen(self, loop: asyncio.AbstractEventLoop) -> None:
        port = self.config.port
        binds = self.config.bind
        errors: list[str] = []
        for entry in binds:
            host = entry.lstrip("-")
            try:
                server = await loop.create_server(
                    lambda: ClientProtocol(self.core),
                    host=host,
                    port=port,
                    reuse_address=True,
                    backlog=511,
                )
            except OSError as exc:
                message = f"Could not create server TCP listening socket {host}:{port}: {exc.strerror}"
                errors.append(message)
                # as Redis: "-addr" may be missing, and so may IPv6 on a host without it;
                # an address in use, or any other address that fails, stops the start
                optional = entry.startswith("-") or host in ("::1", "::")
                if exc.errno == errno.EADDRINUSE or not optional:
                    self._close_listeners()
                    raise StartupError(message) from None
                continue
            self.listeners.append(server)
            self.rebinder.tcp.append(server)
            for sock in server.sockets:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                actual = sock.getsockname()[1]
                if port == 0:
                    port = actual  # the other addresses bind the same port
                self.ports.append(actual)
        tls_port = self.config.tls_port
        if tls_port:
            await self._listen_tls(loop, binds, tls_port)
        if not self.listeners:
            raise StartupError("; ".join(errors) or "no address to listen on")
        for message in errors:
            log.warning("%s (continuing on the other addresses)", message)
        self.core.tcp_port = port

    def tls_context(self) -> ssl.SSLContext:
        """The server's TLS settings from the tls-* directives."""
        config = self.config
        if not config.tls_cert_file or not config.tls_key_file:
            raise StartupError("tls-port needs tls-cert-file and tls-key-file")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(config.tls_cert_file, config.tls_key_file)
            if config.tls_ca_cert_file:
                context.load_verify_locations(config.tls_ca_cert_file)
        except (OSError, ssl.SSLError) as exc:
            raise StartupError(f"cannot load TLS certificates: {exc}") from None
        mode = config.tls_auth_clients
        if mode == "yes":
            if not config.tls_ca_cert_file:
                raise StartupError("tls-auth-clients yes needs tls-ca-cert-file")
            context.verify_mode = ssl.CERT_REQUIRED
        elif mode == "optional":
            context.verify_mode = ssl.CERT_OPTIONAL
        else:
            context.verify_mode = ssl.CERT_NONE
        return context

    async def _listen_tls(self, loop: asyncio.AbstractEventLoop, binds: list[str], port: int) -> None:
        context = self.tls_context()
        for host in binds:
            host = host.lstrip("-")
            try:
                server = await loop.create_server(
                    lambda: ClientProtocol(self.core, tls=True),
                    host=host,
                    port=port,
                    ssl=context,
                    reuse_address=True,
                    backlog=511,
                )
            except OSError as exc:
                if host in ("::1", "::") and exc.errno != errno.EADDRINUSE:
                    log.warning("no TLS listener on %s:%s: %s", host, port, exc.strerror)
                    continue
                self._close_listeners()
                raise StartupError(
                    f"Could not create server TLS listening socket {host}:{port}: {exc.strerror}"
                ) from None
            self.listeners.append(server)
            self.rebinder.tls.append(server)
            for sock in server.sockets:
                actual = sock.getsockname()[1]
                if port == 0:
                    port = actual
        self.core.tls_port = port

    def _close_listeners(self) -> None:
        for server in self.listeners:
            server.close()
        self.listeners.clear()

    # --- background -----------------------------------------------------------------
    async def _cron(self) -> None:
        """Active expiry and client timeouts, ``hz`` times a second."""
        core = self.core
        while True:
            await asyncio.sleep(1.0 / core.config.hz)
            if core.busy is not None:
                continue  # a script runs on the script thread: only it touches the data
            try:
                self.expire_cycle()
                self._timeout_clients()
                for sub in core.subsystems:
                    sub.tick()
            except Exception:
                log.exception("background cycle failed")

    def expire_cycle(self) -> int:
        core = self.core
        if core.loading:
            return 0
        started = time.monotonic()
        removed_total = 0
        while True:
            now = core.clock.now_ms()
            removed = core.db.purge_expired(now, EXPIRE_BATCH)
            removed_total += removed
            if removed < EXPIRE_BATCH or (time.monotonic() - started) * 1000 > EXPIRE_CYCLE_BUDGET_MS:
                break
        core.stats.expired_keys += removed_total
        return removed_total

    def _timeout_clients(self) -> None:
        timeout = self.config.timeout
        if not timeout:
            return
        now = self.core.clock.now_ms()
        for ctx in list(self.core.clients.values()):
            if (ctx.flags or ctx.blocked or ctx in self.core.monitors or ctx.is_master_link
                    or ctx.pubsub is not None):
                continue  # as Redis: replicas, the primary, MONITOR and blocked clients stay
            if now - ctx.last_interaction_ms > timeout * 1000 and ctx.closer is not None:
                ctx.closer()

    # --- stop ---------------------------------------------------------------------
    def request_shutdown(self, save: bool | None = None) -> None:
        self.save_on_shutdown = save
        if self.stopping is not None:
            self.stopping.set()

    async def serve(self) -> None:
        await self.start()
        assert self.stopping is not None
        await self.stopping.wait()
        await self.shutdown()

    async def shutdown(self) -> None:
        log.info("shutting down")
        self._close_listeners()
        for task in self.tasks:
            task.cancel()
        for sub in reversed(self.core.subsystems):
            result = sub.close(self.save_on_shutdown)
            if result is not None:
                await result
        for ctx in list(self.core.clients.values()):
            if ctx.closer is not None:
                ctx.closer()
        log.info("hotkv is now ready to exit, bye bye...")


def setup_logging(config: Config) -> None:
    level = {
        "debug": logging.DEBUG,
        "verbose": logging.INFO,
        "notice": logging.INFO,
        "warning": logging.WARNING,
        "nothing": logging.CRITICAL + 1,
    }[config.loglevel]
    logfile = config.logfile
    handler: logging.Handler
    handler = logging.FileHandler(logfile) if logfile else logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(process)d:M %(asctime)s %(levelname).1s %(message)s",
                                           "%d %b %Y %H:%M:%S"))
    root = logging.getLogger("hotkv")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-v", "--version"):
        print(f"hotkv-server v={__version__}")
        return 0
    if args and args[0] in ("-h", "--help"):
        print("usage: hotkv-server [config-file] [--directive value ...]")
        return 0
    try:
        config = load_config(args)
    except ConfigError as exc:
        print(f"*** FATAL CONFIG ERROR *** {exc}", file=sys.stderr)
        return 1
    setup_logging(config)
    server = Server(config)

    async def run() -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, server.request_shutdown, None)
        try:
            await server.serve()
        except StartupError as exc:
            log.error("%s", exc)
            return 1
        return 0

    try:
        try:
            import uvloop
        except ImportError:  # uvloop is optional on platforms without it
            code = asyncio.run(run())
        else:
            code = uvloop.run(run())
    except KeyboardInterrupt:
        code = 0
    exit_promptly(code)
    return code  # not reached


def exit_promptly(code: int) -> None:
    """End the process now that every file is closed and the log flushed.

    A normal interpreter exit would first free every object one by one: with a few hundred
    thousand keys that takes seconds in which the process still holds its memory (and a
    supervisor waiting for it to go waits too). Nothing is left to write (the data files were
    closed before "bye bye"), so, as Redis does, exit at once.
    """
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
