"""The ACL user table of a server (``core.users``): every user, authentication with its
failure counters, and the ACL log. The users' rules and checks are in ``acl_user.py``;
the ACL command in ``acl.py``.
"""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hotkv_server.commands.acl_user import User, default_user
from hotkv_server.engine import errors
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError

if TYPE_CHECKING:
    from hotkv_server.engine.core import Core

#: failed AUTH attempts per client address in one window before attempts are refused unchecked
AUTH_FAILURE_LIMIT = 20
AUTH_FAILURE_WINDOW_S = 60.0


@dataclass
class LogEntry:
    count: int
    reason: str
    context: str
    object: str
    username: str
    created: float
    updated: float
    client_info: str


class UserTable:
    """Every user of the server, the ACL log, and the AUTH failure counters."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self.users: dict[str, User] = {"default": default_user(core.config.requirepass)}
        self.log: deque[LogEntry] = deque()
        self.failures: dict[str, tuple[int, float]] = {}

    def default_needs_auth(self) -> bool:
        user = self.users["default"]
        return not (user.enabled and user.nopass)

    def initial_user(self) -> User:
        return self.users["default"]

    def set_requirepass(self, password: str) -> None:
        user = self.users["default"]
        user.apply_rules(["resetpass", ">" + password] if password else ["nopass"])

    def authenticate(self, ctx: Context, username: bytes | None, password: bytes) -> str | None:
        """Log ``ctx`` in as ``username`` (default when None); None on success, else the error."""
        name = "default" if username is None else username.decode("utf-8", "replace")
        host = ctx.addr.rsplit(":", 1)[0]
        now = time.monotonic()
        count, since = self.failures.get(host, (0, now))
        if now - since > AUTH_FAILURE_WINDOW_S:
            count, since = 0, now
        if username is None and self.users["default"].nopass and not self.core.config.requirepass:
            return errors.AUTH_NOT_CONFIGURED
        user = self.users.get(name)
        if count >= AUTH_FAILURE_LIMIT:
            # too many guesses from this address: refuse without checking until the window ends
            self._log(ctx, "auth", "AUTH", name)
            return errors.WRONGPASS
        if user is None or not user.enabled or not user.password_ok(password):
            self.failures[host] = (count + 1, since)
            self._log(ctx, "auth", "AUTH", name)
            return errors.WRONGPASS
        self.failures.pop(host, None)
        ctx.user = user
        ctx.username = user.name
        ctx.authenticated = True
        return None

    def log_denial(self, ctx: Context, reason: str, obj: str, *, context: str | None = None) -> None:
        self._log(ctx, reason, obj, ctx.username, context)

    def _log(self, ctx: Context, reason: str, obj: str, username: str,
             context: str | None = None) -> None:
        now = time.time()
        if context is None:
            context = "multi" if ctx.multi is not None else "toplevel"
        for entry in self.log:
            if (entry.reason, entry.context, entry.object, entry.username) == (
                reason, context, obj, username
            ) and now - entry.updated < 60:
                entry.count += 1
                entry.updated = now
                return
        from hotkv_server.commands.connection import client_line

        self.log.appendleft(
            LogEntry(1, reason, context, obj, username, now, now, client_line(ctx, ctx.now_ms))
        )
        while len(self.log) > self.core.config.acllog_max_len:
            self.log.pop()

    # --- files ----------------------------------------------------------------------
    def load_lines(self, lines: list[str], source: str) -> dict[str, User]:
        from hotkv_server.engine.config import split_line

        users: dict[str, User] = {}
        for number, raw in enumerate(lines, start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            words = split_line(line)
            if len(words) < 2 or words[0] != "user":
                raise ValueError(f"{source}:{number}: expected 'user <name> [rules ...]'")
            user = User.new(words[1])
            try:
                user.apply_rules(words[2:])
            except CommandError as exc:
                raise ValueError(f"{source}:{number}: {exc.message}") from None
            users[user.name] = user
        return users

    def load_file(self, path: str) -> None:
        with open(path, encoding="utf-8") as fh:
            users = self.load_lines(fh.read().splitlines(), path)
        if "default" not in users:
            users["default"] = default_user(self.core.config.requirepass)
        self.users = users

    def save_file(self, path: str) -> None:
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as fh:
            for name in sorted(self.users):
                fh.write(self.users[name].describe() + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
