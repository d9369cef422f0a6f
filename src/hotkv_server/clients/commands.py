"""One method per AMEM command, shared by the client, its pipelines and the asyncio twin.

The methods only build the command and call ``self.execute_command``; decoding happens
in the response callbacks of :mod:`hotkv_server.clients.replies`, so a pipeline or a
transaction (whose ``execute_command`` queues instead of sending) and the asyncio client
(whose ``execute_command`` returns an awaitable) reuse the same methods, as redis-py's own
command mixins are shared.

Arguments: ids, roles, texts and values are ``str`` or ``bytes``; options are keyword
arguments named after the command's tokens in lower case (``window=``, ``ttl=``,
``minsim=``); durations are seconds (``ttl=``) or milliseconds (``px=``), an ``int`` or a
``timedelta``; ``meta`` is a mapping (sent as JSON) or JSON text; vectors are lists,
numpy arrays or ready FP32 blobs, always sent as one FP32 blob.

The return types below are those of the synchronous client; on the asyncio client every
method returns an awaitable of the same type, and on a pipeline the pipeline itself.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator, Mapping
from datetime import timedelta
from typing import (
    TYPE_CHECKING,
    Any,
    Concatenate,
    Generic,
    Literal,
    ParamSpec,
    TypeAlias,
    TypeVar,
    overload,
)

from redis.client import NEVER_DECODE

from hotkv_server.clients.replies import Record
from hotkv_server.clients.vectors import VectorT, to_fp32

IdT: TypeAlias = str | bytes
TextT: TypeAlias = str | bytes
ValueT: TypeAlias = str | bytes | int | float
DurationT: TypeAlias = int | timedelta
MetaT: TypeAlias = Mapping[str, Any] | str | bytes
RoleT: TypeAlias = Literal["system", "user", "assistant", "tool"] | str
MetricT: TypeAlias = Literal["COSINE", "IP", "L2", "cosine", "ip", "l2"]
EvictT: TypeAlias = Literal["LOWCONF", "OLDEST", "NONE", "lowconf", "oldest", "none"]
FusionT: TypeAlias = Literal["RRF", "LINEAR", "rrf", "linear"]
MergeT: TypeAlias = Literal[
    "REPLACE", "APPEND", "INCR", "MAX", "MIN", "replace", "append", "incr", "max", "min"
]
StoreT: TypeAlias = Literal["conv", "sem", "work", "epis", "summary"]
BoundT: TypeAlias = int | str | bytes

#: passed with every AMEM command: read the reply as bytes even under
#: decode_responses=True, so an FP32 vector survives; the callbacks decode text themselves
_RAW: dict[str, Any] = {NEVER_DECODE: []}


def _seconds(value: DurationT) -> int:
    return int(value.total_seconds()) if isinstance(value, timedelta) else int(value)


def _millis(value: DurationT) -> int:
    return int(value.total_seconds() * 1000) if isinstance(value, timedelta) else int(value)


def _meta(value: MetaT) -> TextT:
    if isinstance(value, str | bytes):
        return value
    return json.dumps(dict(value), separators=(",", ":"), ensure_ascii=False)


def _expiry(ttl: DurationT | None, px: DurationT | None) -> list[Any]:
    pieces: list[Any] = []
    if ttl is not None:
        pieces += ["TTL", _seconds(ttl)]
    if px is not None:
        pieces += ["PX", _millis(px)]
    return pieces


def _work_value(value: Any) -> ValueT:
    """str/bytes/int/float as Redis sends them; anything else (dict, list, bool) as JSON."""
    if isinstance(value, str | bytes | int | float) and not isinstance(value, bool):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


_P = ParamSpec("_P")
_R = TypeVar("_R")

if TYPE_CHECKING:

    class method(Generic[_P, _R]):
        """A command method as type checkers see it: on an :class:`AsyncAmemCommands`
        (the asyncio client) it returns an ``Awaitable`` of what it returns elsewhere, so
        the asyncio client's types are derived from these very signatures."""

        def __init__(self, fn: Callable[Concatenate[Any, _P], _R]) -> None: ...

        @overload
        def __get__(self, obj: None, owner: type[Any]) -> Callable[Concatenate[Any, _P], _R]: ...
        @overload
        def __get__(
            self, obj: AsyncAmemCommands, owner: type[Any]
        ) -> Callable[_P, Awaitable[_R]]: ...
        @overload
        def __get__(self, obj: object, owner: type[Any]) -> Callable[_P, _R]: ...
        def __get__(self, obj: Any, owner: type[Any]) -> Any: ...

else:

    def method(fn):
        return fn  # at run time the plain function: no wrapper on any call


class AmemCommands:
    """The AMEM.* command methods; mixed into a redis-py client or pipeline class."""

    execute_command: Any  # provided by the redis-py class this is mixed into

    def _amem(self, *args: Any, **options: Any) -> Any:
        return self.execute_command(*args, **_RAW, **options)

    # --- conversation memory ------------------------------------------------------
    @method
    def amem_conv_create(
        self,
        session: IdT,
        *,
        window: int | None = None,
        ttl: DurationT | None = None,
        px: DurationT | None = None,
        update: bool = False,
    ) -> bool:
        """Create a conversation (``update=True``: change an existing one's settings)."""
        args: list[Any] = ["AMEM.CONV.CREATE", session]
        if window is not None:
            args += ["WINDOW", window]
        args += _expiry(ttl, px)
        if update:
            args.append("UPDATE")
        return self._amem(*args)

    @method
    def amem_conv_append(
        self, session: IdT, role: RoleT, content: TextT, *, meta: MetaT | None = None
    ) -> int:
        """Append a turn; returns its sequence number."""
        args: list[Any] = ["AMEM.CONV.APPEND", session, role, content]
        if meta is not None:
            args += ["META", _meta(meta)]
        return self._amem(*args, "WITHSEQ")

    @method
    def amem_conv_window(self, session: IdT, n: int | None = None) -> list[Record]:
        """The last ``n`` turns (all held by default), oldest first: dicts with
        ``seq``, ``role``, ``content``, ``ts`` and ``meta`` when given."""
        args: list[Any] = ["AMEM.CONV.WINDOW", session]
        if n is not None:
            args.append(n)
        return self._amem(*args)

    @method
    def amem_conv_len(self, session: IdT) -> int:
        """Turns held (0 when the conversation is missing)."""
        return self._amem("AMEM.CONV.LEN", session)

    @method
    def amem_conv_info(self, session: IdT) -> Record | None:
        """``window``, ``ttl`` (ms left, -1 none), ``turns``, ``appended``, ``created``,
        ``updated``; None when missing."""
        return self._amem("AMEM.CONV.INFO", session)

    @method
    def amem_conv_del(self, *sessions: IdT) -> int:
        """Delete conversations; returns how many existed."""
        return self._amem("AMEM.CONV.DEL", *sessions)

    # --- semantic memory ----------------------------------------------------------
    @method
    def amem_sem_create(
        self,
        ns: IdT,
        dim: int | None = None,
        *,
        metric: MetricT | None = None,
        m: int | None = None,
        ef_construction: int | None = None,
        ef: int | None = None,
        capacity: int | None = None,
        evict: EvictT | None = None,
        embedder: str | None = None,
        update: bool = False,
    ) -> bool:
        """Create a namespace of ``dim``-dimensional facts (``update=True``: change EF,
        CAPACITY, EVICT of an existing one). With ``embedder`` (e.g. "wordllama") the server
        embeds the facts' texts and text queries, and ``dim`` may be left out."""
        args: list[Any] = ["AMEM.SEM.CREATE", ns] + ([] if dim is None else [dim])
        for token, value in (("METRIC", metric), ("M", m), ("EF_CONSTRUCTION", ef_construction),
                             ("EF", ef), ("CAPACITY", capacity), ("EVICT", evict),
                             ("EMBEDDER", embedder)):
            if value is not None:
                args += [token, value]
        if update:
            args.append("UPDATE")
        return self._amem(*args)

    @method
    def amem_sem_store(
        self,
        ns: IdT,
        id: IdT,
        text: TextT,
        vector: VectorT | None = None,
        *,
        nx: bool = False,
        xx: bool = False,
        ttl: DurationT | None = None,
        px: DurationT | None = None,
        kind: str | None = None,
        confidence: float | None = None,
        source: TextT | None = None,
        description: TextT | None = None,
        meta: MetaT | None = None,
    ) -> int | None:
        """Store (or replace) the fact ``id``: 1 created, 0 replaced, None when
        ``nx``/``xx`` blocked it. Without ``vector`` the namespace's embedder embeds ``text``."""
        args: list[Any] = ["AMEM.SEM.STORE", ns, id, text]
        if vector is not None:
            args += ["FP32", to_fp32(vector)]
        if nx:
            args.append("NX")
        if xx:
            args.append("XX")
        args += _expiry(ttl, px)
        for token, value in (("KIND", kind), ("CONFIDENCE", confidence), ("SOURCE", source),
                             ("DESCRIPTION", description)):
            if value is not None:
                args += [token, value]
        if meta is not None:
            args += ["META", _meta(meta)]
        return self._amem(*args, "WITHCREATED")

    @method
    def amem_sem_recall(
        self,
        ns: IdT,
        k: int,
        vector: VectorT | None = None,
        *,
        text: TextT | None = None,
        minsim: float | None = None,
        kind: str | None = None,
        minconf: float | None = None,
        prefix: TextT | None = None,
        ef: int | None = None,
        exact: bool = False,
        withvectors: bool = False,
    ) -> list[Record]:
        """Up to ``k`` facts nearest to ``vector``, best first, each a dict with
        ``similarity`` (float) and the fact's fields. ``exact=True`` scans every fact
        (brute force) instead of searching the HNSW graph: the true nearest, to compare.
        ``text=`` instead of a vector: the namespace's embedder embeds the query."""
        if (vector is None) == (text is None):
            raise ValueError("amem_sem_recall needs a vector or text=, not both")
        args: list[Any] = ["AMEM.SEM.RECALL", ns, k]
        args += ["TEXT", text] if text is not None else ["FP32", to_fp32(vector)]  # type: ignore[arg-type]
        for token, value in (("MINSIM", minsim), ("KIND", kind), ("MINCONF", minconf),
                             ("PREFIX", prefix), ("EF", ef)):
            if value is not None:
                args += [token, value]
        if exact:
            args.append("EXACT")
        if withvectors:
            args.append("WITHVECTORS")
        return self._amem(*args)

    @method
    def amem_sem_search(
        self,
        ns: IdT,
        k: int,
        query: TextT,
        *,
        vector: VectorT | None = None,
        fusion: FusionT | None = None,
        alpha: float | None = None,
        minscore: float | None = None,
        kind: str | None = None,
        minconf: float | None = None,
        prefix: TextT | None = None,
    ) -> list[Record]:
        """Up to ``k`` facts matching ``query`` by text (BM25), best first; with ``vector``
        the text and vector rankings fused (``fusion`` "RRF", the default, or "LINEAR" with
        ``alpha`` the vector's weight). Each hit has ``score`` (fused), ``text_score``
        (BM25), ``similarity`` (with a vector) and the fact's fields. A server without
        AMEM.SEM.SEARCH answers "unknown command", a plain ``ResponseError``."""
        args: list[Any] = ["AMEM.SEM.SEARCH", ns, k, "TEXT", query]
        if vector is not None:
            args += ["VECTOR", "FP32", to_fp32(vector)]
        for token, value in (("FUSION", fusion), ("ALPHA", alpha), ("MINSCORE", minscore),
                             ("KIND", kind), ("MINCONF", minconf), ("PREFIX", prefix)):
            if value is not None:
                args += [token, value]
        return self._amem(*args)

    @method
    def amem_search(
        self, agent: IdT, k: int, vector: VectorT, *, text: TextT | None = None
    ) -> list[Record]:
        """Up to ``k`` hits across the agent's semantic namespace (by ``vector``), episodic
        log and working notes (by ``text``, a hotkv extension), best first; each has
        ``source`` ("semantic", "episodic" or "working"), ``id``, ``text`` and
        ``similarity``."""
        args: list[Any] = ["AMEM.SEARCH", agent, k, "FP32", to_fp32(vector)]
        if text is not None:
            args += ["TEXT", text]
        return self._amem(*args)

    @method
    def amem_sem_get(self, ns: IdT, id: IdT, *, withvector: bool = False) -> Record | None:
        """The fact ``id`` (no ``similarity``), or None."""
        args: list[Any] = ["AMEM.SEM.GET", ns, id]
        if withvector:
            args.append("WITHVECTOR")
        return self._amem(*args)

    @method
    def amem_sem_del(self, ns: IdT, *ids: IdT) -> int:
        """Delete facts; returns how many existed."""
        return self._amem("AMEM.SEM.DEL", ns, *ids)

    @method
    def amem_sem_list(
        self,
        ns: IdT,
        *,
        prefix: TextT | None = None,
        kind: str | None = None,
        cursor: int | str | bytes = 0,
        count: int | None = None,
    ) -> tuple[str, list[Record]]:
        """One page of facts in id order: ``(next_cursor, facts)``; ``"0"`` ends the walk."""
        args: list[Any] = ["AMEM.SEM.LIST", ns]
        for token, value in (("PREFIX", prefix), ("KIND", kind)):
            if value is not None:
                args += [token, value]
        # CURSOR selects hotkv's paged form (the dialect's bare form is a flat id list)
        args += ["CURSOR", cursor]
        if count is not None:
            args += ["COUNT", count]
        return self._amem(*args)

    @method
    def amem_sem_info(self, ns: IdT) -> Record | None:
        """``dim``, ``metric``, ``count``, ``capacity``, ``evict``, ``m``,
        ``ef_construction``, ``ef``, and once the server's recall self-check has run
        ``recall_estimate`` (float), ``recall_sample``, ``recall_checked`` (ms); None when
        missing."""
        return self._amem("AMEM.SEM.INFO", ns)

    @method
    def amem_sem_drop(self, ns: IdT) -> bool:
        """Drop a namespace and all its facts; False when it did not exist."""
        return self._amem("AMEM.SEM.DROP", ns)

    # --- working memory -----------------------------------------------------------
    @method
    def amem_work_set(
        self,
        session: IdT,
        key: IdT,
        value: Any,
        *,
        ttl: DurationT | None = None,
        px: DurationT | None = None,
        keepttl: bool = False,
        nx: bool = False,
        xx: bool = False,
        merge: MergeT | None = None,
    ) -> bool | str | None:
        """Set a scratchpad key. ``value`` is sent as it is when str/bytes/int/float, else
        as JSON. Returns True (None when ``nx``/``xx`` blocked it), or with ``merge`` other
        than REPLACE the new stored value."""
        args: list[Any] = ["AMEM.WORK.SET", session, key, _work_value(value)]
        args += _expiry(ttl, px)
        if keepttl:
            args.append("KEEPTTL")
        if nx:
            args.append("NX")
        if xx:
            args.append("XX")
        if merge is not None:
            args += ["MERGE", merge]
        return self._amem(*args, merge=merge)

    @method
    def amem_work_get(
        self, session: IdT, key: IdT, *, default: ValueT | None = None
    ) -> str | None:
        """The value of ``key``, else ``default``, else None."""
        args: list[Any] = ["AMEM.WORK.GET", session, key]
        if default is not None:
            args += ["DEFAULT", default]
        return self._amem(*args)

    @method
    def amem_work_mget(self, session: IdT, *keys: IdT) -> list[str | None]:
        """The values of ``keys`` (None where missing), in order."""
        return self._amem("AMEM.WORK.MGET", session, *keys)

    @method
    def amem_work_del(self, session: IdT, *keys: IdT) -> int:
        """Delete keys; returns how many existed."""
        return self._amem("AMEM.WORK.DEL", session, *keys)

    @method
    def amem_work_getall(self, session: IdT) -> dict[str, str]:
        """The whole scratchpad as a dict (empty when missing)."""
        return self._amem("AMEM.WORK.GETALL", session)

    @method
    def amem_work_len(self, session: IdT) -> int:
        """Keys in the scratchpad."""
        return self._amem("AMEM.WORK.LEN", session)

    @method
    def amem_work_ttl(self, session: IdT, key: IdT) -> int:
        """Milliseconds left for ``key``: -1 no TTL, -2 missing."""
        return self._amem("AMEM.WORK.TTL", session, key)

    @method
    def amem_work_expire(self, session: IdT, seconds: DurationT) -> bool:
        """Let the whole scratchpad expire in ``seconds``; False when it is missing."""
        return self._amem("AMEM.WORK.EXPIRE", session, _seconds(seconds))

    @method
    def amem_work_clear(self, session: IdT) -> int:
        """Remove every key; returns how many there were."""
        return self._amem("AMEM.WORK.CLEAR", session)

    # --- episodic memory ----------------------------------------------------------
    @method
    def amem_epis_log(
        self,
        agent: IdT,
        type: str,
        text: TextT,
        *,
        meta: MetaT | None = None,
        source: TextT | None = None,
    ) -> str:
        """Log an event; returns its id ``"<ms>-<seq>"``."""
        args: list[Any] = ["AMEM.EPIS.LOG", agent, type, text]
        if meta is not None:
            args += ["META", _meta(meta)]
        if source is not None:
            args += ["SOURCE", source]
        return self._amem(*args, "WITHID")

    @method
    def amem_epis_query(
        self,
        agent: IdT,
        *,
        type: str | None = None,
        start: BoundT | None = None,
        end: BoundT | None = None,
        limit: int | None = None,
        rev: bool = False,
    ) -> list[Record]:
        """Events (``id``, ``ts``, ``type``, ``text``, ``source``, ``meta``), oldest first
        or newest first with ``rev``; ``start``/``end`` (FROM/TO) are a ms timestamp, an
        event id, ``"-"`` or ``"+"``, inclusive."""
        args: list[Any] = ["AMEM.EPIS.QUERY", agent]
        for token, value in (("TYPE", type), ("FROM", start), ("TO", end), ("LIMIT", limit)):
            if value is not None:
                args += [token, value]
        if rev:
            args.append("REV")
        return self._amem(*args)

    @method
    def amem_epis_len(self, agent: IdT) -> int:
        """Events in the log."""
        return self._amem("AMEM.EPIS.LEN", agent)

    @method
    def amem_epis_trim(
        self, agent: IdT, *, maxlen: int | None = None, before: BoundT | None = None
    ) -> int:
        """Keep the newest ``maxlen`` events, or drop those before ``before``; returns how
        many were removed. Exactly one of the two."""
        if (maxlen is None) == (before is None):
            raise ValueError("amem_epis_trim needs exactly one of maxlen= and before=")
        args: list[Any] = ["AMEM.EPIS.TRIM", agent]
        args += ["MAXLEN", maxlen] if maxlen is not None else ["BEFORE", before]
        return self._amem(*args)

    @method
    def amem_epis_del(self, agent: IdT) -> bool:
        """Delete the whole log; False when there was none."""
        return self._amem("AMEM.EPIS.DEL", agent)

    # --- rolling summary ----------------------------------------------------------
    @method
    def amem_summary_set(
        self,
        agent: IdT,
        text: TextT,
        *,
        ifversion: int | None = None,
        upto: str | bytes | None = None,
    ) -> int:
        """Replace the summary; returns the new version (``Conflict`` on ``ifversion``)."""
        args: list[Any] = ["AMEM.SUMMARY.SET", agent, text]
        if ifversion is not None:
            args += ["IFVERSION", ifversion]
        if upto is not None:
            args += ["UPTO", upto]
        return self._amem(*args)

    @method
    def amem_summary_append(
        self, agent: IdT, line: TextT, *, ifversion: int | None = None
    ) -> int:
        """Add a line to the summary; returns the new version."""
        args: list[Any] = ["AMEM.SUMMARY.APPEND", agent, line]
        if ifversion is not None:
            args += ["IFVERSION", ifversion]
        return self._amem(*args)

    @method
    def amem_summary_get(self, agent: IdT) -> Record | None:
        """``text``, ``version``, ``updated``, ``upto`` (if set); None when missing."""
        return self._amem("AMEM.SUMMARY.GET", agent, "RECORD")

    @method
    def amem_summary_del(self, agent: IdT) -> bool:
        """Delete the summary; False when there was none."""
        return self._amem("AMEM.SUMMARY.DEL", agent)

    # --- across the stores --------------------------------------------------------
    @method
    def amem_scan(
        self,
        cursor: int | str | bytes,
        type: StoreT,
        *,
        match: TextT | None = None,
        count: int | None = None,
    ) -> tuple[str, list[str]]:
        """One step of a walk over one store's ids: ``(next_cursor, ids)``."""
        args: list[Any] = ["AMEM.SCAN", cursor, "TYPE", type]
        if match is not None:
            args += ["MATCH", match]
        if count is not None:
            args += ["COUNT", count]
        return self._amem(*args)


class AsyncAmemCommands(AmemCommands):
    """The same methods for the asyncio client, whose ``execute_command`` returns an
    awaitable: to type checkers each ``amem_*`` method returns an ``Awaitable`` of its
    synchronous return type (see :class:`method`)."""


class AmemIterators:
    """Whole walks over AMEM.SCAN and AMEM.SEM.LIST for the synchronous client."""

    def amem_scan_iter(
        self: Any, type: StoreT, *, match: TextT | None = None, count: int | None = None
    ) -> Iterator[str]:
        """Every id of one store (AMEM.SCAN until the cursor is back at 0)."""
        cursor = "0"
        while True:
            cursor, ids = self.amem_scan(cursor, type, match=match, count=count)
            yield from ids
            if cursor == "0":
                return

    def amem_sem_list_iter(
        self: Any,
        ns: IdT,
        *,
        prefix: TextT | None = None,
        kind: str | None = None,
        count: int | None = None,
    ) -> Iterator[Record]:
        """Every fact of a namespace in id order (AMEM.SEM.LIST page by page)."""
        cursor = "0"
        while True:
            cursor, facts = self.amem_sem_list(ns, prefix=prefix, kind=kind, cursor=cursor,
                                               count=count)
            yield from facts
            if cursor == "0":
                return
