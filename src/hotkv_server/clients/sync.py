"""The synchronous hotkv client: ``redis.Redis`` plus one method per AMEM command.

Everything redis-py does stays as it is (connection pools, TLS, URLs, retries, pipelines,
pub/sub, the Redis commands); the client adds the AMEM methods, decodes their replies in
response callbacks, and reads replies with :class:`~hotkv_server.clients.errors.HotkvParser` so the
memory error codes raise typed exceptions.
"""

from __future__ import annotations

from typing import Any, cast

import redis
from redis.client import Pipeline as RedisPipeline
from redis.event import AfterSingleConnectionInstantiationEvent, ClientType

from hotkv_server.clients.commands import AmemCommands, AmemIterators
from hotkv_server.clients.errors import HotkvParser
from hotkv_server.clients.replies import RESPONSE_CALLBACKS

__all__ = ["Hotkv", "Pipeline", "from_url", "redis_url"]

#: the client's own URL schemes, read as redis-py's
_SCHEMES = {"hotkv://": "redis://", "hotkvs://": "rediss://"}


def redis_url(url: str) -> str:
    """``hotkv://`` -> ``redis://`` and ``hotkvs://`` -> ``rediss://``; others unchanged."""
    for ours, theirs in _SCHEMES.items():
        if url[: len(ours)].lower() == ours:
            return theirs + url[len(ours):]
    return url


def install_parser(pool: Any, parser: type[Any]) -> None:
    """Make the connections ``pool`` creates from now on read replies with ``parser``."""
    pool.connection_kwargs["parser_class"] = parser


class Pipeline(AmemCommands, RedisPipeline):
    """A redis-py pipeline (or MULTI/EXEC transaction) with the AMEM methods.

    The methods queue and return the pipeline; ``execute()`` returns the decoded replies.
    """


class Hotkv(AmemIterators, AmemCommands, redis.Redis):
    """A redis-py client for hotkv: every ``redis.Redis`` argument and method, plus
    ``amem_*`` methods whose replies are plain dicts/lists and whose errors are typed."""

    def __init__(self, *args: Any, single_connection_client: bool = False, **kwargs: Any) -> None:
        # The pool must know the parser before its first connection exists, and a
        # single-connection client connects inside redis.Redis.__init__: so the pinned
        # connection is taken here, after the parser is installed, as redis.Redis does it.
        super().__init__(*args, single_connection_client=False, **kwargs)  # type: ignore[misc]
        install_parser(self.connection_pool, HotkvParser)
        self.response_callbacks.update(RESPONSE_CALLBACKS)
        if single_connection_client:
            self._single_connection_client = True
            self.connection = self.connection_pool.get_connection()
            self._event_dispatcher.dispatch(
                AfterSingleConnectionInstantiationEvent(
                    self.connection, ClientType.SYNC, self.single_connection_lock
                )
            )

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> Hotkv:
        """``hotkv://``, ``hotkvs://`` (TLS), ``redis://``, ``rediss://`` or ``unix://`` URL."""
        return cast(Hotkv, super().from_url(redis_url(url), **kwargs))

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Pipeline:
        return Pipeline(self.connection_pool, self.response_callbacks, transaction, shard_hint)


def from_url(url: str, **kwargs: Any) -> Hotkv:
    """A :class:`Hotkv` client for ``url`` (see :meth:`Hotkv.from_url`); keyword arguments
    are redis-py's (``protocol=3``, ``decode_responses=True``, ``max_connections=`` ...)."""
    return Hotkv.from_url(url, **kwargs)
