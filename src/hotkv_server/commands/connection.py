"""Connection commands: PING ECHO HELLO AUTH CLIENT SELECT QUIT RESET."""

from __future__ import annotations

import hmac
from typing import Any

from hotkv_server import __version__
from hotkv_server.engine import errors
from hotkv_server.engine.args import Args, parse_int
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import container, family, help_lines
from hotkv_server.engine.replies import OK, PONG, Simple

command = family(group="connection")

#: the Redis version we report to clients that branch on it (redis-py, redis-cli)
REDIS_COMPAT_VERSION = "7.0.0"


@command("ping", arity=-1, flags="fast",
         tips="request_policy:all_shards response_policy:all_succeeded")
def ping(ctx: Context, argv: list[bytes]) -> Any:
    """PING [message]
    Returns the server's liveliness response.
    """
    if len(argv) > 2:
        raise CommandError(errors.wrong_arity("ping"))
    if ctx.pubsub is not None and ctx.proto == 2:  # subscribed mode: an array, as Redis
        return [b"pong", argv[1] if len(argv) == 2 else b""]
    if len(argv) == 2:
        return argv[1]
    return PONG


@command("echo", arity=2, flags="loading stale fast")
def echo(ctx: Context, argv: list[bytes]) -> Any:
    """ECHO message
    Returns the given string.
    """
    return argv[1]


@command("select", arity=2, flags="loading stale fast")
def select(ctx: Context, argv: list[bytes]) -> Any:
    """SELECT index
    Changes the selected database (only 0 exists).
    """
    index = parse_int(argv[1])
    if index is None:
        raise CommandError(errors.NOT_INTEGER)
    if index != 0:
        raise CommandError(errors.DB_INDEX)
    return OK


@command("quit", arity=-1, flags="noscript no_auth loading stale fast allow_busy")
def quit_(ctx: Context, argv: list[bytes]) -> Any:
    """QUIT
    Closes the connection.
    """
    ctx.close_after_reply = True
    return OK


@command("reset", arity=1, flags="noscript no_auth loading stale fast allow_busy")
def reset(ctx: Context, argv: list[bytes]) -> Any:
    """RESET
    Resets the connection.
    """
    ctx.multi = None
    ctx.multi_error = False
    ctx.unwatch()
    ctx.core.monitors.discard(ctx)
    ctx.core.pubsub.drop(ctx)
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
    return bool(ctx.core.config.requirepass)


def authenticate(ctx: Context, username: bytes | None, password: bytes) -> str | None:
    """Check a username/password pair; on success log the client in, else return the error.

    With the ACL module loaded it decides; otherwise only the default user exists and its
    password is ``requirepass``.
    """
    users = ctx.core.users
    if users is not None:
        result: str | None = users.authenticate(ctx, username, password)
        return result
    required = ctx.core.config.requirepass
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


@command("auth", arity=-2, flags="noscript no_auth loading stale fast allow_busy")
def auth(ctx: Context, argv: list[bytes]) -> Any:
    """AUTH [username] password
    Authenticates the connection.
    """
    if len(argv) > 3:
        raise CommandError(errors.SYNTAX)
    username = argv[1] if len(argv) == 3 else None
    failure = authenticate(ctx, username, argv[-1])
    if failure is not None:
        raise CommandError(failure)
    return OK


@command("hello", arity=-1, flags="noscript no_auth loading stale fast allow_busy")
def hello(ctx: Context, argv: list[bytes]) -> Any:
    """HELLO [protover [AUTH username password] [SETNAME clientname]]
    Handshakes with the server: protocol version, authentication, client name.
    """
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


@command("client|id", arity=2, flags="noscript loading stale",
         help="ID\n    Return the ID of the current connection.")
def client_id(ctx: Context, argv: list[bytes]) -> Any:
    """CLIENT ID
    Returns the unique client ID of the connection.
    """
    return ctx.id


@command("client|setname", arity=3, flags="noscript loading stale",
         help="SETNAME <name>\n    Assign the name <name> to the current connection.")
def client_setname(ctx: Context, argv: list[bytes]) -> Any:
    """CLIENT SETNAME connection-name
    Sets the connection name.
    """
    check_client_name(argv[2])
    ctx.name = argv[2]
    return OK


@command("client|getname", arity=2, flags="noscript loading stale",
         help="GETNAME\n    Return the name of the current connection.")
def client_getname(ctx: Context, argv: list[bytes]) -> Any:
    """CLIENT GETNAME
    Returns the name of the connection.
    """
    return ctx.name or None


@command("client|setinfo", arity=4, flags="noscript loading stale",
         help="SETINFO <LIB-NAME|LIB-VER> <value>\n    Set client library name or version.")
def client_setinfo(ctx: Context, argv: list[bytes]) -> Any:
    """CLIENT SETINFO LIB-NAME libname|LIB-VER libver
    Sets information specific to the client or connection.
    """
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


#: what a client costs beyond its buffers (its Context, protocol object, parser), measured
#: on CPython 3.11; tot-mem adds it as Redis adds sizeof(client)
CLIENT_OVERHEAD = 2200
_NO_BUFFERS = {"fd": -1, "qbuf": 0, "qbuf-free": 0, "obl": 0, "oll": 0, "omem": 0}


def client_flags(ctx: Context) -> str:
    """CLIENT LIST's flags: S replica, M primary, O monitor, P subscriber, x in MULTI."""
    flags = ctx.flags
    if ctx in ctx.core.monitors:
        flags += "O"
    if ctx.pubsub is not None:
        flags += "P"
    if ctx.multi is not None:
        flags += "x"
    return flags or "N"


def client_line(ctx: Context, now_ms: int, argv: list[bytes] | None = None) -> str:
    """One CLIENT LIST line with Redis's fields (``argv``: the command this client runs)."""
    multi = -1 if ctx.multi is None else len(ctx.multi)
    conn = ctx.conn
    buffers = conn.buffers() if conn is not None else _NO_BUFFERS
    argv_mem = sum(len(a) for a in argv) if argv else 0
    multi_mem = sum(sum(len(a) for a in args) for _, args in ctx.multi) if ctx.multi else 0
    subs = ctx.pubsub
    sub, psub, ssub = (len(subs.channels), len(subs.patterns), len(subs.shard)) if subs else (0, 0, 0)
    tot = CLIENT_OVERHEAD + buffers["qbuf"] + buffers["qbuf-free"] + argv_mem + multi_mem + buffers["omem"]
    return (
        f"id={ctx.id} addr={ctx.addr} laddr={ctx.laddr} fd={buffers['fd']} "
        f"name={ctx.name.decode('utf-8', 'replace')} "
        f"age={(now_ms - ctx.created_ms) // 1000} idle={(now_ms - ctx.last_interaction_ms) // 1000} "
        f"flags={client_flags(ctx)} db=0 sub={sub} psub={psub} ssub={ssub} multi={multi} "
        f"qbuf={buffers['qbuf']} qbuf-free={buffers['qbuf-free']} argv-mem={argv_mem} "
        f"multi-mem={multi_mem} rbs={buffers['qbuf'] + buffers['qbuf-free']} rbp={buffers['qbuf']} "
        f"obl={buffers['obl']} oll={buffers['oll']} omem={buffers['omem']} tot-mem={tot} events=r "
        f"cmd={ctx.last_cmd} user={ctx.username} redir=-1 resp={ctx.proto} "
        f"lib-name={ctx.lib_name.decode('utf-8', 'replace')} "
        f"lib-ver={ctx.lib_ver.decode('utf-8', 'replace')}"
    )


@command("client|list", arity=-2, flags="admin noscript loading stale",
         tips="nondeterministic_output",
         help="LIST [TYPE <type>] [ID <id> [<id> ...]]\n    Return information about client connections.")
def client_list(ctx: Context, argv: list[bytes]) -> Any:
    """CLIENT LIST [TYPE NORMAL|MASTER|REPLICA|PUBSUB] [ID id ...]
    Lists open connections.
    """
    clients = list(ctx.core.clients.values())
    args = Args(argv, 2)
    kind_filter: str | None = None
    while args:
        opt = args.token()
        if opt == b"TYPE":
            kind_filter = _type_by_name(args.next("type"))
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
    if kind_filter is not None:
        clients = [c for c in clients if client_type(c) == kind_filter]
    now = ctx.now_ms
    text = "".join(client_line(c, now, argv if c is ctx else None) + "\n"
                   for c in sorted(clients, key=lambda c: c.id))
    return text.encode()


@command("client|info", arity=2, flags="noscript loading stale", tips="nondeterministic_output",
         help="INFO\n    Return information about the current client connection.")
def client_info(ctx: Context, argv: list[bytes]) -> Any:
    """CLIENT INFO
    Returns information about the connection.
    """
    return (client_line(ctx, ctx.now_ms, argv) + "\n").encode()


@command("client|kill", arity=-3, flags="admin noscript loading stale",
         help="KILL <ip:port> | <option> <value> [<option> <value> [...]]\n    Kill connections.")
def client_kill(ctx: Context, argv: list[bytes]) -> Any:
    """CLIENT KILL ip:port|([ID client-id] [TYPE NORMAL|MASTER|SLAVE|REPLICA|PUBSUB] [USER username]
        [ADDR ip:port] [LADDR ip:port] [SKIPME yes|no])
    Terminates open connections.
    """
    clients = list(ctx.core.clients.values())
    if len(argv) == 3:
        addr = argv[2].decode("utf-8", "replace")
        targets = [c for c in clients if c.addr == addr]
        if not targets:
            raise CommandError("ERR No such client")
        _kill(targets[0], ctx)
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
            users = ctx.core.users
            if users is not None and value.decode("utf-8", "replace") not in users.users:
                raise CommandError(f"ERR No such user '{value.decode('utf-8', 'replace')}'")
            selected = [c for c in selected if c.username.encode() == value]
        elif opt == b"TYPE":
            kind = _type_by_name(value)
            selected = [c for c in selected if client_type(c) == kind]
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
        _kill(target, ctx)
        count += 1
    return count


def _kill(target: Context, caller: Context | None = None) -> None:
    """Close a client; the caller itself closes once its reply has left (SKIPME no)."""
    target.close_after_reply = True
    if target is not caller and target.closer is not None:
        target.closer()


def client_type(ctx: Context) -> str:
    """Redis's client type: replica, pubsub, master or normal (getClientType's order)."""
    if "S" in ctx.flags:
        return "replica"
    if ctx.pubsub is not None:
        return "pubsub"
    if "M" in ctx.flags or ctx.is_master_link:
        return "master"
    return "normal"


def _type_by_name(raw: bytes) -> str:
    name = raw.lower().decode("utf-8", "replace")
    kind = {"slave": "replica"}.get(name, name)
    if kind not in ("normal", "master", "replica", "pubsub"):
        raise CommandError(f"ERR Unknown client type '{raw.decode('utf-8', 'replace')}'")
    return kind


@command("client|no-evict", arity=3, flags="admin noscript loading stale")
def client_no_evict(ctx: Context, argv: list[bytes]) -> Any:
    """CLIENT NO-EVICT ON|OFF
    Sets the client eviction mode of the connection (maxmemory-clients).
    """
    mode = argv[2].upper()
    if mode not in (b"ON", b"OFF"):
        raise CommandError(errors.SYNTAX)
    # ids are never reused, so an id left behind by a closed client matches nobody
    exempt = ctx.core.no_evict_clients
    if mode == b"ON":
        exempt.add(ctx.id)
    else:
        exempt.discard(ctx.id)
    return OK


@command("client|help", arity=2, flags="loading stale")
def client_help(ctx: Context, argv: list[bytes]) -> Any:
    """CLIENT HELP
    Returns helpful text about the different subcommands.
    """
    return [Simple(line) for line in help_lines("client", ("id", "info", "getname", "setname", "setinfo", "list", "kill"))]


