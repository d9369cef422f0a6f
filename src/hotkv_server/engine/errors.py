"""Every error message the server sends, in one place.

Messages start with their code (``ERR``, ``NOTFOUND`` ...) and are one line. Functions
build the ones that name an argument so the wording stays the same everywhere.
"""

from __future__ import annotations

# CommandError and WrongTypeError live with the stores (a store may refuse a request)
from hotkv_server.stores.errors import WRONGTYPE, CommandError, WrongTypeError

__all__ = ["WRONGTYPE", "CommandError", "RepliesWithheld", "RequestRefused", "StartupError",
           "WrongTypeError"]


class RequestRefused(Exception):
    """A subsystem refuses what a command asked of it (SAVE while a save runs ...); the
    command answers ``message`` (one line with its code, as CommandError's)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class RepliesWithheld(Exception):
    """Raised by a turn's durable work: this turn's replies must not leave.

    They would acknowledge writes that could not be made durable (a failed AOF write under
    ``appendfsync always``); the connections are closed without answering, so the clients
    see an error instead of a false acknowledgement.
    """


class StartupError(RuntimeError):
    """The server cannot start (port taken, bad directory, unreadable data)."""


# --- Redis wording, used verbatim -------------------------------------------------
SYNTAX = "ERR syntax error"
NOT_INTEGER = "ERR value is not an integer or out of range"
NOT_FLOAT = "ERR value is not a valid float"
INCR_OVERFLOW = "ERR increment or decrement would overflow"
DB_INDEX = "ERR DB index is out of range"
NOAUTH = "NOAUTH Authentication required."
WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."
AUTH_NOT_CONFIGURED = (
    "ERR AUTH <password> called without any password configured for the default user. "
    "Are you sure your configuration is correct?"
)
MULTI_NESTED = "ERR MULTI calls can not be nested"
EXEC_WITHOUT_MULTI = "ERR EXEC without MULTI"
DISCARD_WITHOUT_MULTI = "ERR DISCARD without MULTI"
WATCH_INSIDE_MULTI = "ERR WATCH inside MULTI is not allowed"
EXECABORT = "EXECABORT Transaction discarded because of previous errors."
READONLY = "READONLY You can't write against a read only replica."
LOADING = "LOADING hotkv is loading the dataset in memory"
NOPROTO = "NOPROTO unsupported protocol version"
OOM = "OOM command not allowed when used memory > 'maxmemory'."
NOREPLICAS = "NOREPLICAS Not enough good replicas to write."
MASTERDOWN = ("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.")
BUSY_SCRIPT = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
MISCONF = (
    "MISCONF Errors writing to the AOF file: hotkv refuses writes until the disk works again "
    "(see the server log and INFO persistence)"
)


def unknown_command(name: bytes, args: list[bytes]) -> str:
    shown = "".join(f"'{_clip(a)}' " for a in args[:20])
    return f"ERR unknown command '{_clip(name)}', with args beginning with: {shown}"


def unknown_subcommand(sub: bytes, container: str) -> str:
    return f"ERR unknown subcommand '{_clip(sub)}'. Try {container.upper()} HELP."


def subscribed_mode(fullname: str) -> str:
    """A RESP2 client in subscribed mode ran anything but the subscription commands."""
    return (f"ERR Can't execute '{fullname}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / "
            "QUIT / RESET are allowed in this context")


NOPERM_CHANNEL = "NOPERM this user has no permissions to access one of the channels used as arguments"


def wrong_arity(fullname: str) -> str:
    return f"ERR wrong number of arguments for '{fullname}' command"


def invalid_expire(command: str) -> str:
    return f"ERR invalid expire time in '{command}' command"


def bad_argument(name: str, expected: str, got: bytes | str | None = None) -> str:
    """``ERR invalid WINDOW 'abc': expected an integer 1..100000``."""
    if got is None:
        return f"ERR invalid {name}: expected {expected}"
    return f"ERR invalid {name} '{_clip(got)}': expected {expected}"


def missing_value(option: str) -> str:
    return f"ERR syntax error: {option} needs a value"


def _clip(value: bytes | str, limit: int = 128) -> str:
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    text = text.replace("\r", " ").replace("\n", " ")
    return text[:limit]


def summary_conflict(agent: bytes, version: int) -> str:
    """IFVERSION did not match: ``CONFLICT summary of 'agent-1' is at version 3``."""
    return f"CONFLICT summary of '{_clip(agent)}' is at version {version}"


# --- the string cache (strings.py, keys.py), Redis wording ----------------------------
DECR_OVERFLOW = "ERR decrement would overflow"
INVALID_CURSOR = "ERR invalid cursor"
EXPIRE_NX_CONFLICT = "ERR NX and XX, GT or LT options at the same time are not compatible"
EXPIRE_GT_LT_CONFLICT = "ERR GT and LT options at the same time are not compatible"


def unsupported_option(option: bytes) -> str:
    """EXPIRE's reply to an unknown flag: ``ERR Unsupported option FOO``."""
    return f"ERR Unsupported option {_clip(option)}"


# --- conversation and working memory (conv.py, work.py) -------------------------------
def conv_not_found(session: bytes) -> str:
    """``NOTFOUND session not found: 'session-42'; create it with AMEM.CONV.CREATE``.

    ``session not found`` is the HotKV dialect's wording: the official hotkv-mcp creates the
    session when an append fails with it."""
    return f"NOTFOUND session not found: '{_clip(session)}'; create it with AMEM.CONV.CREATE"


def conv_exists(session: bytes) -> str:
    return f"EXISTS conversation '{_clip(session)}' already exists; add UPDATE to change its settings"


def exclusive_options(*names: str) -> str:
    """``ERR syntax error: NX and XX cannot be used together``."""
    listed = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
    return f"ERR syntax error: {listed} cannot be used together"


# --- semantic memory (sem.py) ---------------------------------------------------------
def sem_not_found(ns: bytes) -> str:
    """``NOTFOUND no semantic namespace 'kb'; create it with AMEM.SEM.CREATE``."""
    return f"NOTFOUND no semantic namespace '{_clip(ns)}'; create it with AMEM.SEM.CREATE"


def sem_exists(ns: bytes) -> str:
    return f"EXISTS semantic namespace '{_clip(ns)}' already exists; add UPDATE to change its settings"


def sem_full(ns: bytes, capacity: int) -> str:
    """``FULL semantic namespace 'kb' holds its CAPACITY of 3 facts and EVICT is NONE``."""
    return (f"FULL semantic namespace '{_clip(ns)}' holds its CAPACITY of {capacity} facts "
            "and EVICT is NONE")


def dim_bad_value(raw: bytes, position: int) -> str:
    """``DIM invalid vector value '0.3x' at position 3: expected a decimal number``."""
    return f"DIM invalid vector value '{_clip(raw, 64)}' at position {position}: expected a decimal number"


def dim_count(expected: int, got: int) -> str:
    """``DIM expected 3 values, got 2``."""
    return f"DIM expected {expected} values, got {got}"


# --- scripting (scripting/, commands/scripting.py), Redis 7.0 wording -------------------
SCRIPT_UNKNOWN_COMMAND = "ERR Unknown Redis command called from script"
SCRIPT_WRONG_ARITY = "ERR Wrong number of args calling Redis command from script"
SCRIPT_NOSCRIPT_COMMAND = "ERR This Redis command is not allowed from script"
SCRIPT_NOPERM_COMMAND = "ERR The user executing the script can't run this command or subcommand"
SCRIPT_NOPERM_KEY = ("ERR The user executing the script can't access at least one of the keys "
                     "mentioned in the command arguments")
SCRIPT_WRITE_IN_READONLY = "ERR Write commands are not allowed from read-only scripts."
NOSCRIPT = "NOSCRIPT No matching script. Please use EVAL."
NOTBUSY = "NOTBUSY No scripts in execution right now."
UNKILLABLE = (
    "UNKILLABLE Sorry the script already executed write commands against the dataset. You can "
    "either wait the script termination or kill the server in a hard way using the SHUTDOWN "
    "NOSAVE command."
)
