"""Connection commands: PING ECHO HELLO AUTH CLIENT SELECT QUIT RESET."""

from __future__ import annotations

import hmac
from typing import Any

from hotkv_server import __version__
from hotkv_server.engine import errors
from hotkv_server.engine.args import Args, parse_int
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import command, container
from hotkv_server.engine.replies import OK, PONG, Simple

#: the Redis version we report to clients that branch on it (redis-py, redis-cli)
REDIS_COMPAT_VERSION = "7.0.0"


@command("ping", arity=-1, flags="fast", group="connection",
         tips="request_policy:all_shards response_policy:all_succeeded",
         summary="Returns the server's liveliness response.", syntax="[message]")
def ping(ctx: Context, argv: list[bytes]) -> Any:
    """PING [message]"""
    if len(argv) > 2:
        raise CommandError(errors.wrong_arity("ping"))
    if len(argv) == 2:
        return argv[1]
    return PONG


@command("echo", arity=2, flags="loading stale fast", group="connection",
         summary="Returns the given string.", syntax="message")
def echo(ctx: Context, argv: list[bytes]) -> Any:
    """ECHO message"""
    return argv[1]


@command("select", arity=2, flags="loading stale fast", group="connection",
         summary="Changes the selected database (only 0 exists).", syntax="index")
def select(ctx: Context, argv: list[bytes]) -> Any:
    """SELECT index"""
    index = parse_int(argv[1])
    if index is None:
        raise CommandError(errors.NOT_INTEGER)
    if index != 0:
        raise CommandError(errors.DB_INDEX)
    return OK


@command("quit", arity=-1, flags="noscript no_auth loading stale fast allow_busy", group="connection",
         summary="Closes the connection.", syntax="")
def quit_(ctx: Context, argv: list[bytes]) -> Any:
    """QUIT"""
    ctx.close_after_reply = True
    return OK


@command("reset", arity=1, flags="noscript no_auth loading stale fast allow_busy", group="connection",
         summary="Resets the connection.", syntax="")
def reset(ctx: Context, argv: list[bytes]) -> Any:
    """RESET"""
    ctx.multi = None
    ctx.multi_error = False
    ctx.unwatch()
    ctx.core.monitors.discard(ctx)
    ctx.proto = 2
    ctx.name = b""
    users = ctx.core.users
    ctx.user = users.initial_user() if users is not None else None
    ctx.username = "default"
    ctx.authenticated = not _auth_required(ctx)
    return Simple("RESET")


def _auth_required(ctx: Context) -> bool:
    users = ctx.core.users
    if users is not None:
        return bool(users.default_needs_auth())
    return bool(ctx.core.config.values["requirepass"])


def authenticate(ctx: Context, username: bytes | None, password: bytes) -> str | None:
    """Check a username/password pair; on success log the client in, else return the error.

    With the ACL module loaded it decides; otherwise only the default user exists and its
    password is ``requirepass``.
    """
    users = ctx.core.users
    if users is not None:
        result: str | None = users.authenticate(ctx, username, password)
        return result
    required = ctx.core.config.values["requirepass"]
    if username not in (None, b"default"):
        return errors.WRONGPASS
    if not required:
        if username is None:
            return errors.AUTH_NOT_CONFIGURED
        ctx.authenticated = True
        return None
    if hmac.compare_digest(password, required.encode()):
        ctx.authenticated = True
        ctx.username = "default"
        return None
    return errors.WRONGPASS


@command("auth", arity=-2, flags="noscript no_auth loading stale fast allow_busy", group="connection",
         summary="Authenticates the connection.", syntax="[username] password")
def auth(ctx: Context, argv: list[bytes]) -> Any:
    """AUTH [username] password"""
    if len(argv) > 3:
        raise CommandError(errors.SYNTAX)
    username = argv[1] if len(argv) == 3 else None
    failure = authenticate(ctx, username, argv[-1])
    if failure is not None:
        raise CommandError(failure)
    return OK


@command("hello", arity=-1, flags="noscript no_auth loading stale fast allow_busy", group="connection",
         summary="Handshakes with the server: protocol version, authentication, client name.",
         syntax="[protover [AUTH username password] [SETNAME clientname]]")
def hello(ctx: Context, argv: list[bytes]) -> Any:
    """HELLO [protover [AUTH username password] [SETNAME clientname]]"""
    proto = ctx.proto
    args = Args(argv, 1)
    if args:
        raw = args.next("protover")
        value = parse_int(raw)
        if value is None:
            raise CommandError("ERR Protocol version is not an integer or out of range")
        if value not in (2, 3):
            raise CommandError(errors.NOPROTO)
        proto = value
    name: bytes | None = None
    while args:
        opt = args.token()
        if opt == b"AUTH" and args.remaining() >= 2:
            user = args.next("username")
            password = args.next("password")
            failure = authenticate(ctx, user, password)
            if failure is not None:
                raise CommandError(failure)
        elif opt == b"SETNAME" and args:
            name = args.next("clientname")
            check_client_name(name)
        else:
            raise CommandError(f"ERR Syntax error in HELLO option '{opt.decode('utf-8', 'replace')}'")
    if not ctx.authenticated:
        raise CommandError("NOAUTH HELLO must be called with the client already authenticated, "
                           "otherwise the HELLO <proto> AUTH <user> <pass> option can be used to "
                           "authenticate the client and select the RESP protocol version at the "
                           "same time")
    if name is not None:
        ctx.name = name
    ctx.proto = proto
    return {
        "server": "redis",
        "version": REDIS_COMPAT_VERSION,
        "proto": proto,
        "id": ctx.id,
        "mode": "standalone",
        "role": "replica" if ctx.core.role == "slave" else "master",
        "modules": [],
        "hotkv": __version__,
    }


def check_client_name(name: bytes) -> None:
    if any(c <= 32 or c > 126 for c in name):
        raise CommandError("ERR Client names cannot contain spaces, newlines or special characters.")


# --- CLIENT ------------------------------------------------------------------------

container("client", group="connection", summary="A container for client connection commands.")


@command("client|id", arity=2, flags="noscript loading stale", group="connection",
         summary="Returns the unique client ID of the connection.")
def client_id(ctx: Context, argv: list[bytes]) -> Any:
    """CLIENT ID"""
    return ctx.id


@command("client|setname", arity=3, flags="noscript loading stale", group="connection",
         summary="Sets the connection name.", syntax="connection-name")
def client_setname(ctx: Context, argv: list[bytes]) -> Any:
    """CLIENT SETNAME connection-name"""
    check_client_name(argv[2])
    ctx.name = argv[2]
    return OK


@command("client|getname", arity=2, flags="noscript loading stale", group="connection",
         summary="Returns the name of the connection.")
def client_getname(ctx: Context, argv: list[bytes]) -> Any:
    """CLIENT GETNAME"""
    return ctx.name or None


@command("client|setinfo", arity=4, flags="noscript loading stale", group="connection",
         summary="Sets information specific to the client or connection.",
         syntax="LIB-NAME libname|LIB-VER libver")
def client_setinfo(ctx: Context, argv: list[bytes]) -> Any:
    """CLIENT SETINFO LIB-NAME libname|LIB-VER libver"""
    attr = argv[2].upper()
    value = argv[3]
    if any(c < 33 or c > 126 for c in value):
        raise CommandError(f"ERR {attr.decode('utf-8', 'replace')} cannot contain spaces, "
                           "newlines or special characters.")
    if attr == b"LIB-NAME":
        ctx.lib_name = value
    elif attr == b"LIB-VER":
        ctx.lib_ver = value
    else:
        raise CommandError(f"ERR Unrecognized option '{argv[2].decode('utf-8', 'replace')}'")
    return OK


def client_line(ctx: Context, now_ms: int) -> str:
    """One CLIENT LIST line with Redis's fields."""
    multi = -1 if ctx.multi is None else len(ctx.multi)
    flags = ctx.flags or ("x" if ctx.multi is not None else "") or ("O" if ctx in ctx.core.monitors else "N")
    return (
        f"id={ctx.id} addr={ctx.addr} laddr={ctx.laddr} fd=-1 "
        f"name={ctx.name.decode('utf-8', 'replace')} "
        f"age={(now_ms - ctx.created_ms) // 1000} idle={(now_ms - ctx.last_interaction_ms) // 1000} "
        f"flags={flags} db=0 sub=0 psub=0 ssub=0 multi={multi} qbuf=0 qbuf-free=0 argv-mem=0 "
        f"multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r "
        f"cmd={ctx.last_cmd} user={ctx.username} redir=-1 resp={ctx.proto} "
        f"lib-name={ctx.lib_name.decode('utf-8', 'replace')} "
        f"lib-ver={ctx.lib_ver.decode('utf-8', 'replace')}"
    )


@command("client|list", arity=-2, flags="admin noscript loading stale", group="connection",
         tips="nondeterministic_output",
         summary="Lists open connections.", syntax="[TYPE NORMAL|MASTER|REPLICA|PUBSUB] [ID id ...]")
def client_list(ctx: Context, argv: list[bytes]) -> Any:
    """CLIENT LIST [TYPE NORMAL|MASTER|REPLICA|PUBSUB] [ID id ...]"""
    clients = list(ctx.core.clients.values())
    args = Args(argv, 2)
    while args:
        opt = args.token()
        if opt == b"TYPE":
            kind = args.choice("TYPE", (b"NORMAL", b"MASTER", b"REPLICA", b"SLAVE", b"PUBSUB"))
            if kind == b"NORMAL":
                clients = [c for c in clients if "S" not in c.flags and "M" not in c.flags]
            elif kind in (b"REPLICA", b"SLAVE"):
                clients = [c for c in clients if "S" in c.flags]
            elif kind == b"MASTER":
                clients = [c for c in clients if "M" in c.flags]
            else:
                clients = []
        elif opt == b"ID":
            ids = set()
            for raw in args.rest():
                value = parse_int(raw)
                if value is None or value <= 0:
                    raise CommandError("ERR Invalid client ID")
                ids.add(value)
            clients = [c for c in clients if c.id in ids]
        else:
            raise CommandError(errors.SYNTAX)
    now = ctx.now_ms
    text = "".join(client_line(c, now) + "\n" for c in sorted(clients, key=lambda c: c.id))
    return text.encode()


@command("client|info", arity=2, flags="noscript loading stale", group="connection",
         tips="nondeterministic_output",
         summary="Returns information about the connection.")
def client_info(ctx: Context, argv: list[bytes]) -> Any:
    """CLIENT INFO"""
    return (client_line(ctx, ctx.now_ms) + "\n").encode()


@command("client|kill", arity=-3, flags="admin noscript loading stale", group="connection",
         summary="Terminates open connections.",
         syntax="ip:port|([ID client-id] [ADDR ip:port] [LADDR ip:port] [USER username] [SKIPME yes|no])")
def client_kill(ctx: Context, argv: list[bytes]) -> Any:
    """CLIENT KILL ip:port | [ID id] [ADDR ip:port] [LADDR ip:port] [USER name] [SKIPME yes|no]"""
    clients = list(ctx.core.clients.values())
    if len(argv) == 3:
        addr = argv[2].decode("utf-8", "replace")
        targets = [c for c in clients if c.addr == addr]
        if not targets:
            raise CommandError("ERR No such client")
        _kill(targets[0])
        return OK
    args = Args(argv, 2)
    skipme = True
    selected = clients
    while args:
        opt = args.token()
        value = args.next(opt.decode("utf-8", "replace"))
        if opt == b"ID":
            cid = parse_int(value)
            if cid is None or cid <= 0:
                raise CommandError("ERR client-id should be greater than 0")
            selected = [c for c in selected if c.id == cid]
        elif opt == b"ADDR":
            selected = [c for c in selected if c.addr.encode() == value]
        elif opt == b"LADDR":
            selected = [c for c in selected if c.laddr.encode() == value]
        elif opt == b"USER":
            selected = [c for c in selected if c.username.encode() == value]
        elif opt == b"SKIPME":
            if value.lower() not in (b"yes", b"no"):
                raise CommandError(errors.SYNTAX)
            skipme = value.lower() == b"yes"
        else:
            raise CommandError(errors.SYNTAX)
    count = 0
    for target in selected:
        if skipme and target is ctx:
            continue
        _kill(target)
        count += 1
    return count


def _kill(target: Context) -> None:
    if target.closer is not None:
        target.close_after_reply = True
        target.closer()


@command("client|no-evict", arity=3, flags="admin noscript loading stale", group="connection",
         summary="Accepted for compatibility; hotkv never evicts clients.", syntax="ON|OFF")
def client_no_evict(ctx: Context, argv: list[bytes]) -> Any:
    """CLIENT NO-EVICT ON|OFF"""
    if argv[2].upper() not in (b"ON", b"OFF"):
        raise CommandError(errors.SYNTAX)
    return OK


@command("client|help", arity=2, flags="loading stale", group="connection",
         summary="Returns helpful text about the different subcommands.")
def client_help(ctx: Context, argv: list[bytes]) -> Any:
    """CLIENT HELP"""
    spec_lines = [
        "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ID", "    Return the ID of the current connection.",
        "INFO", "    Return information about the current client connection.",
        "GETNAME", "    Return the name of the current connection.",
        "SETNAME <name>", "    Assign the name <name> to the current connection.",
        "SETINFO <LIB-NAME|LIB-VER> <value>", "    Set client library name or version.",
        "LIST [TYPE <type>] [ID <id> [<id> ...]]", "    Return information about client connections.",
        "KILL <ip:port> | <option> <value> [<option> <value> [...]]", "    Kill connections.",
        "HELP", "    Print this help.",
    ]
    return [Simple(line) for line in spec_lines]
