"""The value-type protocol of the keyspace: what a hash, a set, a list ... must offer.

The keyspace (``stores/keyspace.py``) maps a key to either ``bytes`` (a string, kept as the
bare value so GET and SET stay cheap) or an instance of a ``TypedValue`` subclass. Each
type lives in its own module (``stores/hashes.py``, ``stores/sets.py`` ...) listed in
``VALUE_TYPE_MODULES`` and registers itself with ``@value_type``. The keyspace knows no
type by name: TYPE, OBJECT ENCODING, MEMORY USAGE, COPY, RENAME, snapshot and restore,
maxmemory accounting and eviction go through this protocol alone.

A type declares its effect records in ``effects``: record class -> function ``(value,
record) -> result``. Each record is an ``@effect`` (``stores/effect.py``) whose op is
``"kv.<verb>"`` and whose first field is ``key`` (``KvHset(key, pairs)``, wire form
``["kv.hset", key, [f, v ...]]``), declared in a module beside the type. The keyspace
applies such a record only to a key that holds this type (a missing key makes it a no-op
returning ``missing``); it keeps the byte count right around the call and deletes the key
when the value is left empty, as Redis removes an empty hash or set. A value is *created*
by the generic ``KvPut(key, type_name, state, deadline|None)`` (``state`` is what
``snapshot`` returns), so a write to a key that the handler found absent always replaces
whatever stale value (expired, not yet purged) a replica or an AOF replay may still hold,
and a write to a key found live never resurrects one that another copy has expired.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from mypy_extensions import mypyc_attr

from hotkv_server.stores.effect import Effect

#: modules whose import registers a value type (add a line for a new type)
VALUE_TYPE_MODULES: tuple[str, ...] = (
    "hotkv_server.stores.hashes",
    "hotkv_server.stores.sets",
    "hotkv_server.stores.listvalue",
    "hotkv_server.stores.zsetvalue",
    "hotkv_server.stores.vectorset",
)

#: type name (as TYPE answers it) -> class
VALUE_TYPES: dict[str, type[TypedValue]] = {}

Applier = Callable[[Any, Any], Any]
V = TypeVar("V", bound="type[TypedValue]")


@mypyc_attr(allow_interpreted_subclasses=True)
class TypedValue:
    """One value that is not a string. Subclasses keep ``nbytes`` up to date.

    Not an ``ABC`` (mypy still checks the abstract methods): compiled, the native classes
    under ABCMeta shared one ``abc`` cache, so ``isinstance(a_hash, SetValue)`` made a later
    ``isinstance(a_hash, TypedValue)`` answer False."""

    __slots__ = ("nbytes",)

    #: what TYPE answers ("hash", "set", "list", "zset")
    type_name: ClassVar[str]
    #: record class -> applier ``(value, record) -> result``; see the module docstring
    effects: ClassVar[dict[type[Effect], Applier]] = {}
    #: what an op returns when its key is missing (a DEL-like op on nothing removes 0)
    missing: ClassVar[Any] = 0
    #: records that never leave the value empty (adds): the keyspace skips the emptiness check
    growing: ClassVar[frozenset[type[Effect]]] = frozenset()

    def __init__(self) -> None:
        #: estimated bytes of the contents (members, fields, overheads), not the key
        self.nbytes = 0

    @abstractmethod
    def __len__(self) -> int:
        """Elements held; a value left with 0 is removed from the keyspace."""

    @abstractmethod
    def encoding(self) -> str:
        """OBJECT ENCODING's answer, with Redis 7.0's names and thresholds."""

    @abstractmethod
    def copy(self) -> TypedValue:
        """An independent copy (COPY)."""

    @abstractmethod
    def snapshot(self) -> Any:
        """The contents as msgpack-able data that ``restore`` takes back."""

    @classmethod
    @abstractmethod
    def restore(cls, state: Any) -> TypedValue:
        """A value built from ``snapshot()``'s data (also the state of ``kv.put``)."""


def value_type(cls: V) -> V:
    """Class decorator: register a value type under its ``type_name``."""
    name = cls.type_name
    if name in VALUE_TYPES and VALUE_TYPES[name] is not cls:
        raise ValueError(f"value type {name!r} registered twice")
    VALUE_TYPES[name] = cls
    return cls


def load_value_types() -> dict[str, type[TypedValue]]:
    """Import every module of ``VALUE_TYPE_MODULES`` (once) and return the registry."""
    import importlib

    for module in VALUE_TYPE_MODULES:
        importlib.import_module(module)
    return VALUE_TYPES


# --- strings -----------------------------------------------------------------------
_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1
#: Redis keeps strings up to this length in one allocation with the object (embstr)
EMBSTR_LIMIT = 44


def string_encoding(value: bytes) -> str:
    """OBJECT ENCODING of a string as Redis 7.0 decides it for a value SET stored:
    ``int`` for a canonical 64-bit integer of at most 20 characters, ``embstr`` up to 44
    bytes, else ``raw``."""
    if len(value) <= 20 and is_canonical_int(value):
        return "int"
    return "embstr" if len(value) <= EMBSTR_LIMIT else "raw"


def is_canonical_int(value: bytes) -> bool:
    """Whether Redis's ``string2ll`` takes this text whole: a 64-bit integer written
    without a plus sign, leading zeros or blanks (``-0`` is not one)."""
    if not value or len(value) > 20:
        return False
    text = value[1:] if value[:1] == b"-" else value
    if not text.isdigit() or (text[:1] == b"0" and (len(text) > 1 or value[:1] == b"-")):
        return False
    return _LONG_MIN <= int(value) <= _LONG_MAX


def is_shared_integer(value: bytes) -> bool:
    """Whether Redis would hold this string as one of its shared integers 0..9999
    (OBJECT REFCOUNT answers INT_MAX for those)."""
    return len(value) <= 4 and value.isdigit() and (value == b"0" or value[:1] != b"0")


def index_range(start: int, stop: int, n: int) -> tuple[int, int] | None:
    """Redis's inclusive ``start..stop`` over ``n`` elements, negative indexes counting from
    the end, as a half-open range of real positions; None when it selects nothing
    (LRANGE, LTRIM, ZRANGE by rank, ZREMRANGEBYRANK)."""
    if start < 0:
        start = max(n + start, 0)
    if stop < 0:
        stop = n + stop
    if start > stop or start >= n:
        return None
    return start, min(stop, n - 1) + 1
