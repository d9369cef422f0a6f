"""The asyncio hotkv client: ``redis.asyncio.Redis`` plus the AMEM methods.

The same command methods as the synchronous client (:mod:`hotkv_server.clients.commands`): on
this client each returns an awaitable of the decoded reply, on its pipelines the pipeline
(``await pipe.execute()`` returns the decoded replies).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import redis.asyncio as redis_asyncio
from redis.asyncio.client import Pipeline as RedisPipeline

from hotkv_server.clients.commands import AmemCommands, AsyncAmemCommands, IdT, StoreT, TextT
from hotkv_server.clients.errors import AsyncHotkvParser
from hotkv_server.clients.replies import RESPONSE_CALLBACKS, Record
from hotkv_server.clients.sync import install_parser, redis_url

__all__ = ["Hotkv", "Pipeline", "from_url"]

# redis-py's own asyncio classes disagree with themselves on command_info's signature
class Pipeline(AmemCommands, RedisPipeline):  # type: ignore[misc]
    """An asyncio redis-py pipeline (or transaction) with the AMEM methods."""


class Hotkv(AsyncAmemCommands, redis_asyncio.Redis):  # type: ignore[misc]
    """An asyncio redis-py client for hotkv (see :class:`hotkv.Hotkv`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # asyncio clients connect lazily (first command or ``await client``), so the
        # parser can be installed after redis.asyncio.Redis.__init__ built the pool
        super().__init__(*args, **kwargs)
        install_parser(self.connection_pool, AsyncHotkvParser)
        self.response_callbacks.update(RESPONSE_CALLBACKS)

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> Hotkv:  # type: ignore[override]
        """``hotkv://``, ``hotkvs://`` (TLS), ``redis://``, ``rediss://`` or ``unix://`` URL."""
        client: Hotkv = super().from_url(redis_url(url), **kwargs)  # type: ignore[assignment]
        return client

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Pipeline:
        return Pipeline(self.connection_pool, self.response_callbacks, transaction, shard_hint)

    async def amem_scan_iter(
        self, type: StoreT, *, match: TextT | None = None, count: int | None = None
    ) -> AsyncIterator[str]:
        """Every id of one store (AMEM.SCAN until the cursor is back at 0)."""
        cursor = "0"
        while True:
            cursor, ids = await self.amem_scan(cursor, type, match=match, count=count)
            for ident in ids:
                yield ident
            if cursor == "0":
                return

    async def amem_sem_list_iter(
        self,
        ns: IdT,
        *,
        prefix: TextT | None = None,
        kind: str | None = None,
        count: int | None = None,
    ) -> AsyncIterator[Record]:
        """Every fact of a namespace in id order (AMEM.SEM.LIST page by page)."""
        cursor = "0"
        while True:
            cursor, facts = await self.amem_sem_list(
                ns, prefix=prefix, kind=kind, cursor=cursor, count=count
            )
            for fact in facts:
                yield fact
            if cursor == "0":
                return


def from_url(url: str, **kwargs: Any) -> Hotkv:
    """An asyncio :class:`Hotkv` client for ``url``."""
    return Hotkv.from_url(url, **kwargs)
