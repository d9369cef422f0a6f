"""Configuration: one table of directives, parsed from hotkv.conf and ``--directive`` flags.

A directive has the same name in the file, on the command line (``--port 6380``) and in
``CONFIG GET/SET``. Bad names or values stop the start with a message naming the line or
the flag; ``CONFIG SET`` answers the same checks with an error reply.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any, get_args

from hotkv_server.engine.args import parse_int
from hotkv_server.engine.settings import (
    AclPubsubDefault,
    EvictionPolicy,
    FsyncPolicy,
    LogLevel,
    Pooling,
    Settings,
    TlsAuthClients,
    WordllamaDim,
    attribute,
)
from hotkv_server.engine.words import split_args


class ConfigError(ValueError):
    """A bad directive name or value; the message says where and what was expected."""


_UNITS = {
    "": 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000**2, "mb": 1024**2, "g": 1000**3, "gb": 1024**3,
}


#: the reasons of a bad value, in Redis 7's words (CONFIG SET's error after "- ")
MEMORY_VALUE = "argument must be a memory value"
NOT_AN_INTEGER = "argument couldn't be parsed into an integer"
YES_OR_NO = "argument must be 'yes' or 'no'"


def out_of_range(lo: int, hi: int) -> str:
    return f"argument must be between {lo} and {hi} inclusive"


def parse_memory(text: str) -> int:
    """``64mb`` -> 67108864, as Redis reads memory sizes (k=1000, kb=1024)."""
    lowered = text.strip().lower()
    digits = lowered.rstrip("kmgb")
    unit = lowered[len(digits) :]
    if unit not in _UNITS or not digits.isdigit():  # (no sign: sizes are never negative)
        raise ValueError(MEMORY_VALUE)
    return int(digits) * _UNITS[unit]


_LIMITS_CACHE: dict[str, dict[str, tuple[int, int, int]]] = {}
_LIMIT_CLASSES = ("normal", "replica", "pubsub")


def _buffer_limits(values: list[str]) -> str:
    """``class hard soft seconds`` groups (Redis's words for a bad one) -> canonical text
    of just the classes named, sizes in bytes (``slave`` is ``replica``)."""
    words = " ".join(values).split()
    if len(words) % 4:  # none at all is accepted and changes nothing, as in Redis
        raise ValueError("Wrong number of arguments in buffer limit configuration.")
    table: dict[str, tuple[int, int, int]] = {}
    for i in range(0, len(words), 4):
        name = words[i].lower()
        name = "replica" if name == "slave" else name
        if name not in _LIMIT_CLASSES:
            raise ValueError("Invalid client class specified in buffer limit configuration.")
        bad = "Error in hard, soft or soft_seconds setting in buffer limit configuration."
        try:
            limit = (parse_memory(words[i + 1]), parse_memory(words[i + 2]), int(words[i + 3]))
        except ValueError:
            raise ValueError(bad) from None
        if limit[2] < 0:
            raise ValueError(bad)
        table[name] = limit
    return _limits_text(table)


def _limits_text(table: dict[str, tuple[int, int, int]]) -> str:
    return " ".join(f"{name} {' '.join(map(str, table[name]))}" for name in _LIMIT_CLASSES
                    if name in table)


def _merge_limits(current: str, new: str) -> str:
    """Redis sets only the classes named; the others keep their limits."""
    table = {name: output_limits(current, name) for name in _LIMIT_CLASSES}
    table.update((name, output_limits(new, name)) for name in new.split()[0::4])
    return _limits_text(table)


def _format_limits(value: Any) -> str:
    """As Redis 7.0 shows it: every class, sizes in bytes, the replica class as ``slave``."""
    shown = _limits_text({name: output_limits(value, name) for name in _LIMIT_CLASSES})
    return shown.replace("replica ", "slave ", 1)


def output_limits(text: str, klass: str) -> tuple[int, int, int]:
    """(hard, soft, soft-seconds) of one client class from the directive's text."""
    table = _LIMITS_CACHE.get(text)
    if table is None:
        table = {}
        words = text.split()
        for i in range(0, len(words) - 3, 4):
            name = {"slave": "replica"}.get(words[i].lower(), words[i].lower())
            try:
                table[name] = (parse_memory(words[i + 1]), parse_memory(words[i + 2]), int(words[i + 3]))
            except ValueError:
                continue
        _LIMITS_CACHE[text] = table
    return table.get(klass, (0, 0, 0))


def _parse_bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("yes", "true", "1"):
        return True
    if lowered in ("no", "false", "0"):
        return False
    raise ValueError(YES_OR_NO)


def _format_bool(value: Any) -> str:
    return "yes" if value else "no"


def _format_memory(value: Any) -> str:
    return str(value)


@dataclass(frozen=True)
class Directive:
    name: str
    default: Any
    parse: Callable[[list[str]], Any]
    format: Callable[[Any], str]
    mutable: bool = True
    repeatable: bool = False  # every occurrence adds to a list ("user")
    sensitive: bool = False  # hidden from CONFIG GET values? (Redis shows requirepass)
    #: (current value, parsed new one) -> the value set, for a directive whose setting
    #: changes only part of it (client-output-buffer-limit: the classes named)
    merge: Callable[[Any, Any], Any] | None = None


def _single(convert: Callable[[str], Any]) -> Callable[[list[str]], Any]:
    def parse(values: list[str]) -> Any:
        if len(values) != 1:
            raise ValueError(f"expected one value, got {len(values)}")
        return convert(values[0])

    return parse


def _integer(text: str, lo: int, hi: int) -> int:
    """An integer as Redis reads one (digits and a '-', no spaces, no '+' or leading zeros)
    within lo..hi."""
    value = parse_int(text.encode())
    if value is None:
        raise ValueError(NOT_AN_INTEGER)
    if not lo <= value <= hi:
        raise ValueError(out_of_range(lo, hi))
    return value


def _int_range(lo: int, hi: int) -> Callable[[list[str]], Any]:
    return _single(lambda text: _integer(text, lo, hi))


def _clamped(lo: int, hi: int, low: int, high: int) -> Callable[[list[str]], Any]:
    """An integer of lo..hi kept within low..high, as Redis sets ``hz`` (0 is 1, 1000 is
    500: CONFIG GET shows the value kept)."""
    return _single(lambda text: min(max(_integer(text, lo, hi), low), high))


class _Choice:
    """The parser of one word out of a ``Literal``'s choices (``_Choice(FsyncPolicy)``:
    ``always``, ``everysec`` or ``no``, any case; an int choice's word is its digits), so
    the type of the attribute (engine/settings.py) is where the words are listed."""

    def __init__(self, kind: Any) -> None:
        self.choices: tuple[str | int, ...] = get_args(kind)
        self._by_word = {str(c): c for c in self.choices}
        self._lower = all(isinstance(c, str) for c in self.choices)

    def __call__(self, values: list[str]) -> Any:
        if len(values) != 1:
            raise ValueError(f"expected one value, got {len(values)}")
        text = values[0]
        found = self._by_word.get(text.lower() if self._lower else text)
        if found is None:
            raise ValueError("argument(s) must be one of the following: "
                             + ", ".join(self._by_word))
        return found


def _memory(values: list[str]) -> int:
    if len(values) != 1:
        raise ValueError(f"expected one value, got {len(values)}")
    return parse_memory(values[0])


def _words(values: list[str]) -> list[str]:
    words = [word for value in values for word in value.split()]
    if not words:
        raise ValueError("expected at least one value")
    return words


_SAVE_NUMBER = re.compile(r"\+?[0-9]+")


def _save_points(values: list[str]) -> str:
    """``save``: pairs of seconds and changes (``3600 1 300 100``), or nothing. Redis's
    error text; numbers come back normalised, as CONFIG GET shows them in Redis."""
    words = " ".join(values).split()
    if len(words) % 2 or not all(_SAVE_NUMBER.fullmatch(word) and int(word) < 2**63
                                 for word in words):
        raise ValueError("Invalid save parameters")
    return " ".join(str(int(word)) for word in words)


def _replicaof(values: list[str]) -> tuple[str, int] | None:
    if len(values) == 2 and values[0].lower() == "no" and values[1].lower() == "one":
        return None
    if len(values) != 2:
        raise ValueError("expected host and port")
    try:
        port = int(values[1])
    except ValueError:
        raise ValueError(f"expected a port number, got '{values[1]}'") from None
    if not 0 < port < 65536:
        raise ValueError(f"expected a port 1..65535, got '{values[1]}'")
    return (values[0], port)


def _format_replicaof(value: Any) -> str:
    return "" if value is None else f"{value[0]} {value[1]}"


def _str(text: str) -> str:
    return text


_B = (_single(_parse_bool), _format_bool)


def _notify_flags(values: list[str]) -> int:
    """notify-keyspace-events: the class bits (kept as bits: Redis shows ``AKEn`` as ``AKE``
    yet still publishes ``new``)."""
    from hotkv_server.engine.notify_flags import parse_flags

    return parse_flags("".join(values))


def _format_notify_flags(value: Any) -> str:
    from hotkv_server.engine.notify_flags import format_flags

    return format_flags(int(value))

DIRECTIVES: dict[str, Directive] = {
    d.name: d
    for d in [
        Directive("bind", ["127.0.0.1", "::1"], _words, " ".join),
        Directive("port", 6379, _int_range(0, 65535), str),
        Directive("dir", "./data", _single(_str), str, mutable=False),
        Directive("appendonly", True, *_B),
        Directive("appendfilename", "appendonly.aof", _single(_str), str, mutable=False),
        Directive("appendfsync", "everysec", _Choice(FsyncPolicy), str),
        Directive("aof-load-truncated", True, *_B),
        Directive("auto-aof-rewrite-percentage", 100, _int_range(0, 100000), str),
        Directive("auto-aof-rewrite-min-size", 64 * 1024**2, _memory, _format_memory),
        Directive("requirepass", "", _single(_str), str, sensitive=True),
        Directive("user", [], _words, " ".join, mutable=False, repeatable=True),
        Directive("aclfile", "", _single(_str), str, mutable=False),
        Directive("protected-mode", True, *_B),
        Directive("maxclients", 10000, _int_range(1, 1_000_000), str),
        Directive("maxmemory", 0, _memory, _format_memory),
        # all clients' unread replies together (Redis: 0, no cap): server/client_memory.py
        Directive("maxmemory-clients", 1024**3, _memory, _format_memory),
        Directive("maxmemory-policy", "noeviction", _Choice(EvictionPolicy), str),
        Directive("proto-max-bulk-len", 512 * 1024**2, _memory, _format_memory),
        Directive("client-query-buffer-limit", 1024**3, _memory, _format_memory),
        Directive("timeout", 0, _int_range(0, 2**31 - 1), str),
        Directive("tcp-keepalive", 300, _int_range(0, 2**31 - 1), str),
        Directive("replicaof", None, _replicaof, _format_replicaof, mutable=False),
        Directive("masterauth", "", _single(_str), str, sensitive=True),
        Directive("masteruser", "", _single(_str), str),
        Directive("replica-read-only", True, *_B),
        Directive("repl-backlog-size", 1024**2, _memory, _format_memory),
        Directive("loglevel", "notice", _Choice(LogLevel), str),
        Directive("logfile", "", _single(_str), str, mutable=False),
        Directive("slowlog-log-slower-than", 10000, _int_range(-1, 2**62), str),
        Directive("slowlog-max-len", 128, _int_range(0, 2**31 - 1), str),
        Directive("hz", 10, _clamped(0, 2**31 - 1, 1, 500), str),
        Directive("databases", 1, _int_range(1, 1), str, mutable=False),
        # normal clients are limited by default (Redis: 0 0 0), so that one client that
        # never reads cannot take the server's memory (docs/security.md)
        Directive("client-output-buffer-limit",
                  "normal 67108864 16777216 60 replica 268435456 67108864 60 pubsub 33554432 8388608 60",
                  _buffer_limits, _format_limits, merge=_merge_limits),
        Directive("tls-port", 0, _int_range(0, 65535), str),
        Directive("tls-cert-file", "", _single(_str), str),
        Directive("tls-key-file", "", _single(_str), str),
        Directive("tls-ca-cert-file", "", _single(_str), str),
        Directive("tls-auth-clients", "yes", _Choice(TlsAuthClients), str),
        Directive("save", "", _save_points, str),
        Directive("notify-keyspace-events", 0, _notify_flags, _format_notify_flags),
        Directive("acl-pubsub-default", "resetchannels", _Choice(AclPubsubDefault), str),
        Directive("acllog-max-len", 128, _int_range(0, 2**63 - 1), str),
        Directive("min-replicas-to-write", 0, _int_range(0, 2**31 - 1), str),
        Directive("min-replicas-max-lag", 10, _int_range(0, 2**31 - 1), str),
        Directive("repl-ping-replica-period", 10, _int_range(1, 2**31 - 1), str),
        Directive("replica-serve-stale-data", True, *_B),
        Directive("maxmemory-samples", 5, _int_range(1, 64), str),
        Directive("busy-reply-threshold", 5000, _int_range(0, 2**63 - 1), str),
        Directive("latency-tracking", True, *_B),
        Directive("daemonize", False, *_B, mutable=False),
        Directive("replica-priority", 100, _int_range(0, 2**31 - 1), str),
        Directive("replica-announce-ip", "", _single(_str), str),
        Directive("replica-announce-port", 0, _int_range(0, 65535), str),
        Directive("replica-announced", True, *_B),
        # a hash's listpack limits (stores/hashes.py): a change acts at the hash's next write
        Directive("hash-max-listpack-entries", 512, _int_range(0, 2**63 - 1), str),
        Directive("hash-max-listpack-value", 64, _int_range(0, 2**63 - 1), str),
        # a sorted set's and a set's limits (stores/zsetvalue.py, stores/sets.py): the same
        Directive("zset-max-listpack-entries", 128, _int_range(0, 2**63 - 1), str),
        Directive("zset-max-listpack-value", 64, _int_range(0, 2**63 - 1), str),
        Directive("set-max-intset-entries", 512, _int_range(0, 2**63 - 1), str),
        # a list's node size and compression in Redis's quicklist: accepted and shown, with
        # nothing to change here (a list is one deque; OBJECT ENCODING says quicklist)
        Directive("list-max-listpack-size", -2, _int_range(-2**31, 2**31 - 1), str),
        Directive("list-compress-depth", 0, _int_range(0, 2**31 - 1), str),
        # embedders (hotkv_server.embedding, docs/embeddings.md)
        Directive("embed-threads", 2, _int_range(1, 64), str, mutable=False),
        Directive("embed-timeout-ms", 30_000, _int_range(1, 3_600_000), str),
        Directive("embed-cache-max-memory", 64 * 1024**2, _memory, _format_memory),
        Directive("embed-wordllama", True, *_B, mutable=False),
        Directive("embed-wordllama-dim", 256, _Choice(WordllamaDim), str, mutable=False),
        Directive("embed-openai-url", "", _single(_str), str),
        Directive("embed-openai-model", "", _single(_str), str, mutable=False),
        Directive("embed-openai-dim", 0, _int_range(0, 4096), str, mutable=False),
        Directive("embed-openai-api-key-env", "OPENAI_API_KEY", _single(_str), str),
        Directive("embed-openai-api-key-file", "", _single(_str), str),
        Directive("embed-openai-batch-size", 64, _int_range(1, 2048), str),
        Directive("embed-openai-timeout-ms", 30_000, _int_range(1, 600_000), str),
        Directive("embed-openai-retries", 3, _int_range(0, 10), str),
        Directive("embed-openai-backoff-ms", 500, _int_range(0, 60_000), str),
        Directive("embed-openai-send-dimensions", False, *_B, mutable=False),
        Directive("embed-fastembed-path", "", _single(_str), str, mutable=False),
        Directive("embed-fastembed-dim", 0, _int_range(0, 4096), str, mutable=False),
        Directive("embed-fastembed-model-file", "model.onnx", _single(_str), str, mutable=False),
        Directive("embed-fastembed-pooling", "mean", _Choice(Pooling), str, mutable=False),
        Directive("cluster-enabled", False, *_B, mutable=False),
        Directive("cluster-config-file", "nodes.conf", _single(_str), str, mutable=False),
        Directive("cluster-require-full-coverage", True, *_B),
        Directive("cluster-announce-ip", "", _single(_str), str),
        Directive("cluster-announce-port", 0, _int_range(0, 65535), str),
    ]
}


#: other names of directives, as Redis keeps them (CONFIG GET lists both names)
ALIASES = {"slaveof": "replicaof", "lua-time-limit": "busy-reply-threshold",
           "slave-priority": "replica-priority", "slave-announce-ip": "replica-announce-ip",
           "slave-announce-port": "replica-announce-port",
           "hash-max-ziplist-entries": "hash-max-listpack-entries",
           "hash-max-ziplist-value": "hash-max-listpack-value",
           "zset-max-ziplist-entries": "zset-max-listpack-entries",
           "zset-max-ziplist-value": "zset-max-listpack-value",
           "list-max-ziplist-size": "list-max-listpack-size"}


def canonical(name: str) -> str:
    lowered = name.lower()
    return ALIASES.get(lowered, lowered)


#: each directive's attribute on Config (``engine.settings.attribute``)
ATTRIBUTES: dict[str, str] = {name: attribute(name) for name in DIRECTIVES}


class Values(MutableMapping[str, Any]):
    """``config.values``: the directives by name (``config.values["maxmemory"]``), for code
    that handles any directive (tests); a view of Config's attributes, not a copy. A reader
    of one directive uses its typed attribute (``config.maxmemory``)."""

    __slots__ = ("_config",)

    def __init__(self, config: Config) -> None:
        self._config = config

    def __getitem__(self, name: str) -> Any:
        return getattr(self._config, ATTRIBUTES[name])

    def __setitem__(self, name: str, value: Any) -> None:
        setattr(self._config, ATTRIBUTES[name], value)

    def __delitem__(self, name: str) -> None:
        raise TypeError(f"a directive can't be removed: '{name}'")

    def __iter__(self) -> Iterator[str]:
        return iter(DIRECTIVES)

    def __len__(self) -> int:
        return len(DIRECTIVES)

    def __contains__(self, name: object) -> bool:
        return name in DIRECTIVES


class Config(Settings):
    """The value of every directive, each in its typed attribute (``config.appendfsync``,
    ``engine.settings.Settings``); ``values`` is the same by directive name.

    ``path`` is the config file it came from (for CONFIG REWRITE), if any.
    """

    # one slot per directive: a read is one attribute load, no lookup by name
    __slots__ = (*ATTRIBUTES.values(), "path", "values")

    def __init__(self, path: str | None = None) -> None:
        self.path = path
        self.values = Values(self)
        for name, d in DIRECTIVES.items():
            setattr(self, ATTRIBUTES[name], list(d.default) if isinstance(d.default, list) else d.default)

    def get(self, name: str) -> Any:
        """The value of the directive ``name`` (a canonical name, as in DIRECTIVES)."""
        return getattr(self, ATTRIBUTES[name])

    def restore(self, saved: dict[str, Any]) -> None:
        """Put back values read with :meth:`get` (a CONFIG SET undone)."""
        for name, value in saved.items():
            setattr(self, ATTRIBUTES[name], value)

    def set(self, name: str, values: list[str], *, where: str, initial: bool = True) -> None:
        """Set one directive from its words; raise ConfigError naming ``where`` on bad input."""
        lname = canonical(name)
        directive = DIRECTIVES.get(lname)
        if directive is None:
            raise ConfigError(f"{where}: unknown directive '{name}'")
        if not initial and not directive.mutable:
            raise ConfigError(f"{where}: '{lname}' can't be changed at run time")
        try:
            value = directive.parse(values)
        except ValueError as exc:
            shown = " ".join(values)
            raise ConfigError(f"{where}: bad value for '{lname}' ('{shown}'): {exc}") from None
        attr = ATTRIBUTES[lname]
        if directive.repeatable:
            getattr(self, attr).append(value)
        elif directive.merge is not None:
            setattr(self, attr, directive.merge(getattr(self, attr), value))
        else:
            setattr(self, attr, value)

    def matching(self, pattern: str) -> Iterable[tuple[str, str]]:
        """(name, formatted value) for CONFIG GET with a glob pattern (aliases included; not
        the ``user`` directive, which is no config parameter in Redis either)."""
        lowered = pattern.lower()
        for name, directive in DIRECTIVES.items():
            if directive.repeatable:
                # ``user`` lines are ACL state (with passwords in the clear): as in Redis,
                # where ``user`` is a config-file directive only, CONFIG GET does not list
                # them; ACL LIST shows the users with password digests
                continue
            if fnmatch.fnmatchcase(name, lowered):
                yield name, directive.format(self.get(name))
        for alias, name in ALIASES.items():
            if fnmatch.fnmatchcase(alias, lowered):
                yield alias, DIRECTIVES[name].format(self.get(name))

    def render(self, current: dict[str, Any] | None = None) -> str:
        """The whole configuration as hotkv.conf lines (CONFIG REWRITE); ``current``: values
        to write instead of the configured ones (the live ACL users for ``user``)."""
        lines: list[str] = []
        for name, directive in DIRECTIVES.items():
            value = current[name] if current is not None and name in current else self.get(name)
            if directive.repeatable:
                lines.extend(f"{name} {directive.format(v)}" for v in value)
                continue
            if value == directive.default:
                continue
            text = directive.format(value)
            if text == "":
                text = '""'
            lines.append(f"{name} {quote_if_needed(text)}")
        return "\n".join(lines) + "\n"


def quote_if_needed(text: str) -> str:
    if text and all(c not in text for c in " \"'\t\\") and text.isprintable():
        return text
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def split_line(line: str) -> list[str]:
    """Split a config line into words as Redis's sdssplitargs does (quotes, escapes)."""
    raw = line.encode("utf-8", "surrogateescape")
    return [word.decode("utf-8", "surrogateescape") for word in split_args(raw)]


def load_config(argv: list[str]) -> Config:
    """Build the configuration from ``[config-file] [--directive value ...]``."""
    path: str | None = None
    rest = list(argv)
    if rest and not rest[0].startswith("--"):
        path = rest.pop(0)
    config = Config(path)
    if path is not None:
        if path == "-":
            raise ConfigError("reading the configuration from standard input is not supported")
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as exc:
            raise ConfigError(f"cannot read config file '{path}': {exc.strerror}") from None
        apply_text(config, text, source=path)
    i = 0
    while i < len(rest):
        flag = rest[i]
        if not flag.startswith("--") or len(flag) == 2:
            raise ConfigError(f"command line: expected --directive, got '{flag}'")
        values: list[str] = []
        i += 1
        while i < len(rest) and not rest[i].startswith("--"):
            values.append(rest[i])
            i += 1
        name = flag[2:]
        if name in ("version", "help"):
            raise ConfigError(f"command line: '--{name}' must be the only argument")
        if not values:
            raise ConfigError(f"command line --{name}: needs a value")
        config.set(name, values, where=f"command line --{name}")
    return config


def apply_text(config: Config, text: str, source: str) -> None:
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            words = split_line(line)
        except ValueError as exc:
            raise ConfigError(f"{source}:{number}: {exc}") from None
        if not words:
            continue
        if words[0].lower() == "include":
            for inc in words[1:]:
                with open(os.path.join(os.path.dirname(source), inc), encoding="utf-8") as fh:
                    apply_text(config, fh.read(), inc)
            continue
        config.set(words[0], words[1:], where=f"{source}:{number}")


def short_header(max_bulk: int) -> re.Pattern[bytes]:
    """The start of a read whose header needs no check for an authenticated client.

    A count line of at most 5 characters (at most 6 digits are always allowed), then either
    the end of the read or a first bulk length with fewer digits than ``max_bulk`` has
    minus one (so it cannot exceed it). What does not match gets the full check.
    """
    digits = len(str(max_bulk)) - 2
    char = rb"(?:[^\r]|\r(?!\n))"  # up to the first CRLF
    bulk = rb"\$%b{0,%d}\r\n" % (char, digits) if digits >= 0 else rb"(?!)"
    return re.compile(rb"\*%b{0,5}\r\n(?:%b|\Z)" % (char, bulk))
