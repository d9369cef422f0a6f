"""Static types of the AMEM methods on the asyncio client (for type checkers only).

At run time the asyncio client uses the same :class:`~hotkv_server.clients.commands.AmemCommands`
methods as the synchronous one; they return what ``execute_command`` returns, which on
``redis.asyncio.Redis`` is an awaitable. This class states that for type checkers: each
method here has the signature of its synchronous twin with the return type wrapped in
``Awaitable``. ``tests/clients/test_typing.py`` checks the two stay in step.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Protocol

from hotkv_server.clients.commands import (
    BoundT,
    DurationT,
    EvictT,
    FusionT,
    IdT,
    MergeT,
    MetaT,
    MetricT,
    RoleT,
    StoreT,
    TextT,
    ValueT,
)
from hotkv_server.clients.replies import Record
from hotkv_server.clients.vectors import VectorT


class AsyncAmemCommands(Protocol):
    """The AMEM methods as the asyncio client exposes them."""

    def amem_conv_append(
        self,
        session: IdT,
        role: RoleT,
        content: TextT,
        *,
        meta: MetaT | None = None,
    ) -> Awaitable[int]: ...

    def amem_conv_create(
        self,
        session: IdT,
        *,
        window: int | None = None,
        ttl: DurationT | None = None,
        px: DurationT | None = None,
        update: bool = False,
    ) -> Awaitable[bool]: ...

    def amem_conv_del(
        self,
        *sessions: IdT,
    ) -> Awaitable[int]: ...

    def amem_conv_info(
        self,
        session: IdT,
    ) -> Awaitable[Record | None]: ...

    def amem_conv_len(
        self,
        session: IdT,
    ) -> Awaitable[int]: ...

    def amem_conv_window(
        self,
        session: IdT,
        n: int | None = None,
    ) -> Awaitable[list[Record]]: ...

    def amem_epis_del(
        self,
        agent: IdT,
    ) -> Awaitable[bool]: ...

    def amem_epis_len(
        self,
        agent: IdT,
    ) -> Awaitable[int]: ...

    def amem_epis_log(
        self,
        agent: IdT,
        type: str,
        text: TextT,
        *,
        meta: MetaT | None = None,
        source: TextT | None = None,
    ) -> Awaitable[str]: ...

    def amem_epis_query(
        self,
        agent: IdT,
        *,
        type: str | None = None,
        start: BoundT | None = None,
        end: BoundT | None = None,
        limit: int | None = None,
        rev: bool = False,
    ) -> Awaitable[list[Record]]: ...

    def amem_epis_trim(
        self,
        agent: IdT,
        *,
        maxlen: int | None = None,
        before: BoundT | None = None,
    ) -> Awaitable[int]: ...

    def amem_scan(
        self,
        cursor: int | str | bytes,
        type: StoreT,
        *,
        match: TextT | None = None,
        count: int | None = None,
    ) -> Awaitable[tuple[str, list[str]]]: ...

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
    ) -> Awaitable[bool]: ...

    def amem_sem_del(
        self,
        ns: IdT,
        *ids: IdT,
    ) -> Awaitable[int]: ...

    def amem_sem_drop(
        self,
        ns: IdT,
    ) -> Awaitable[bool]: ...

    def amem_sem_get(
        self,
        ns: IdT,
        id: IdT,
        *,
        withvector: bool = False,
    ) -> Awaitable[Record | None]: ...

    def amem_sem_info(
        self,
        ns: IdT,
    ) -> Awaitable[Record | None]: ...

    def amem_sem_list(
        self,
        ns: IdT,
        *,
        prefix: TextT | None = None,
        kind: str | None = None,
        cursor: int | str | bytes = 0,
        count: int | None = None,
    ) -> Awaitable[tuple[str, list[Record]]]: ...

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
    ) -> Awaitable[list[Record]]: ...

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
    ) -> Awaitable[list[Record]]: ...

    def amem_search(
        self, agent: IdT, k: int, vector: VectorT, *, text: TextT | None = None
    ) -> Awaitable[list[Record]]: ...

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
    ) -> Awaitable[int | None]: ...

    def amem_summary_append(
        self,
        agent: IdT,
        line: TextT,
        *,
        ifversion: int | None = None,
    ) -> Awaitable[int]: ...

    def amem_summary_del(
        self,
        agent: IdT,
    ) -> Awaitable[bool]: ...

    def amem_summary_get(
        self,
        agent: IdT,
    ) -> Awaitable[Record | None]: ...

    def amem_summary_set(
        self,
        agent: IdT,
        text: TextT,
        *,
        ifversion: int | None = None,
        upto: str | bytes | None = None,
    ) -> Awaitable[int]: ...

    def amem_work_clear(
        self,
        session: IdT,
    ) -> Awaitable[int]: ...

    def amem_work_del(
        self,
        session: IdT,
        *keys: IdT,
    ) -> Awaitable[int]: ...

    def amem_work_expire(
        self,
        session: IdT,
        seconds: DurationT,
    ) -> Awaitable[bool]: ...

    def amem_work_get(
        self,
        session: IdT,
        key: IdT,
        *,
        default: ValueT | None = None,
    ) -> Awaitable[str | None]: ...

    def amem_work_getall(
        self,
        session: IdT,
    ) -> Awaitable[dict[str, str]]: ...

    def amem_work_len(
        self,
        session: IdT,
    ) -> Awaitable[int]: ...

    def amem_work_mget(
        self,
        session: IdT,
        *keys: IdT,
    ) -> Awaitable[list[str | None]]: ...

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
    ) -> Awaitable[bool | str | None]: ...

    def amem_work_ttl(
        self,
        session: IdT,
        key: IdT,
    ) -> Awaitable[int]: ...
