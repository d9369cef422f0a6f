"""CONFIG SET port / bind / tls-*: listen anew at run time, as Redis does.

The new sockets are bound synchronously, inside CONFIG SET, so a port that cannot be had
answers ``-ERR CONFIG SET failed ... - Unable to listen on this port`` (``bind``: ``Failed
to bind to specified addresses.``) and nothing changes. Only once every new socket is
bound are the old listeners closed; connected clients stay connected either way. The
event loop then serves the new sockets (``loop.create_server(sock=...)`` cannot fail on
an already bound socket).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import ssl
from typing import Any

from hotkv_server.engine.core import Subsystem
from hotkv_server.engine.errors import StartupError
from hotkv_server.server.connection import ClientProtocol

#: the process (``server.app.Server``: not imported, it imports this module)
Server = Any

log = logging.getLogger("hotkv")

_TLS = ("tls-port", "tls-cert-file", "tls-key-file", "tls-ca-cert-file", "tls-auth-clients")


def bind_sockets(hosts: list[str], port: int) -> tuple[list[socket.socket], int]:
    """Listening sockets on every address (``-addr`` and IPv6 loopback may be missing, as
    at start); the port actually bound (for port 0). OSError when one cannot be bound."""
    bound: list[socket.socket] = []
    try:
        for entry in hosts:
            host = entry.lstrip("-")
            try:
                family, kind, proto, _, addr = socket.getaddrinfo(
                    host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
                sock = socket.socket(family, kind, proto)
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    if family == socket.AF_INET6:
                        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                    sock.bind(addr)
                    sock.listen(511)
                    sock.setblocking(False)
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                except OSError:
                    sock.close()
                    raise
            except OSError as exc:
                optional = entry.startswith("-") or host in ("::1", "::")
                if optional and getattr(exc, "errno", None) != errno.EADDRINUSE:
                    continue
                raise
            bound.append(sock)
            if port == 0:
                port = sock.getsockname()[1]
    except OSError:
        for sock in bound:
            sock.close()
        raise
    if not bound:
        raise OSError(errno.EADDRNOTAVAIL, "no address could be bound")
    return bound, port


class Rebinder(Subsystem):
    """The config listener that moves the server's listeners when port/bind/tls-* change."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.tcp: list[Any] = []  # asyncio servers of the plain port
        self.tls: list[Any] = []  # asyncio servers of the TLS port
        self._pending: list[asyncio.Task[Any]] = []
        #: sockets bound and not yet served, by the id of their kind's server list
        self._waiting: dict[int, list[socket.socket]] = {}
        #: the addresses the plain port listens on now (to return to if a new bind fails)
        self.hosts: list[str] = list(server.config.bind)
        #: the TLS settings the TLS port serves with now (to return to on a failed move)
        self.tls_context: ssl.SSLContext | None = None

    def config_changed(self, name: str, value: Any) -> None:
        config = self.server.config
        core = self.server.core
        if name == "port":
            if value == core.tcp_port and value:
                return  # unchanged: keep the sockets
            try:
                socks, port = bind_sockets(config.bind, value)
            except OSError as exc:
                log.warning("CONFIG SET port: cannot listen: %s", exc)
                raise ValueError("Unable to listen on this port. Check server logs.") from None
            self._replace(self.tcp, socks, None)
            core.tcp_port = port
            log.info("listening on %s port %s", " ".join(config.bind), port)
            if config.tls_port:
                self._rebind_tls()
        elif name == "bind":
            # the same port on other addresses: the old sockets must go first (as Redis, which
            # listens on the old addresses again if the new ones cannot be had)
            port = core.tcp_port or config.port
            self._replace(self.tcp, [], None)
            try:
                socks, port = bind_sockets(value, port)
            except OSError as exc:
                log.warning("CONFIG SET bind: cannot listen: %s; back on %s", exc, self.hosts)
                socks, port = bind_sockets(self.hosts, port)
                self._replace(self.tcp, socks, None)
                raise ValueError("Failed to bind to specified addresses.") from None
            self.hosts = list(value)
            self._replace(self.tcp, socks, None)
            core.tcp_port = port
            log.info("listening on %s port %s", " ".join(config.bind), port)
            if config.tls_port:
                self._rebind_tls()
        elif name in _TLS:
            self._rebind_tls()

    def _rebind_tls(self) -> None:
        """Listen on tls-port with the current tls-* settings (the old TLS sockets are
        closed first, as the port may be the same; on failure the old port comes back)."""
        config = self.server.config
        port = config.tls_port
        core = self.server.core
        if not port:
            self._replace(self.tls, [], None)
            core.tls_port = 0
            return
        if not config.tls_cert_file or not config.tls_key_file:
            return  # not complete yet (cert and key are usually set one after the other)
        try:
            context = self.server.tls_context()
        except StartupError as exc:
            log.warning("CONFIG SET tls: %s", exc)
            raise ValueError("Unable to update TLS configuration. Check server logs.") from None
        previous = core.tls_port if self.tls else 0
        self._replace(self.tls, [], None)
        try:
            socks, port = bind_sockets(config.bind, port)
        except OSError as exc:
            log.warning("CONFIG SET tls-port: cannot listen: %s", exc)
            if previous and self.tls_context is not None:
                socks, _ = bind_sockets(config.bind, previous)
                self._replace(self.tls, socks, self.tls_context)
            raise ValueError("Unable to listen on this port. Check server logs.") from None
        self.tls_context = context
        self._replace(self.tls, socks, context)
        core.tls_port = port

    def _replace(self, servers: list[Any], socks: list[socket.socket],
                 context: ssl.SSLContext | None) -> None:
        """Close the old listeners of one kind (also sockets bound but not served yet),
        serve the new sockets in their place."""
        for old in servers:
            old.close()
            if old in self.server.listeners:
                self.server.listeners.remove(old)
        servers.clear()
        key = id(servers)
        for sock in self._waiting.pop(key, []):
            sock.close()
        if not socks:
            return
        self._waiting[key] = list(socks)
        loop = asyncio.get_running_loop()
        core = self.server.core
        tls = context is not None

        async def serve() -> None:
            for sock in socks:
                if sock.fileno() < 0:
                    continue  # replaced before it was served
                listener = await loop.create_server(lambda: ClientProtocol(core, tls=tls),
                                                    sock=sock, ssl=context, backlog=511)
                if sock.fileno() < 0:  # replaced while being wrapped
                    listener.close()
                    continue
                servers.append(listener)
                self.server.listeners.append(listener)
            waiting = self._waiting.get(key)
            if waiting is not None and waiting[0] is socks[0]:
                del self._waiting[key]

        task = loop.create_task(serve())
        self._pending.append(task)
        task.add_done_callback(self._pending.remove)
