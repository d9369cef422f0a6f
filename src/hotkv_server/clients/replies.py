"""Reply decoding for the AMEM commands: redis-py response callbacks.

Every callback takes the raw reply (bytes, as read with redis-py's ``NEVER_DECODE`` so a
binary vector survives ``decode_responses=True``) and returns plain Python values that are
the same in RESP2 and RESP3:

* a record (RESP3 map or RESP2 flat array) becomes a ``dict`` with ``str`` keys, fields
  in the server's order;
* counters, sequence numbers, timestamps, versions and sizes are ``int``; ``similarity``,
  ``confidence``, ``score``, ``text_score`` and ``recall_estimate`` are ``float`` (RESP3
  double or RESP2 bulk string alike);
* ``meta`` is parsed from its JSON text into a Python object;
* ``vector`` stays ``bytes`` (the FP32 blob; :func:`hotkv_server.clients.vectors.from_fp32`
  turns it into a list);
* every other text (ids, roles, contents, values, event ids) is ``str``, decoded as UTF-8
  with ``surrogateescape``: nothing is lost, and ``s.encode("utf-8", "surrogateescape")``
  gives back the exact bytes of a value that was not UTF-8.

The callbacks are installed in the client's ``response_callbacks``, which redis-py also
hands to pipelines and transactions, so those decode the same way.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

Record = dict[str, Any]

_INT_FIELDS = frozenset(
    {
        "seq", "ts", "timestamp", "window", "ttl", "turns", "appended", "created", "updated", "expires",
        "dim", "count", "capacity", "m", "ef_construction", "ef", "version",
        "recall_sample", "recall_checked",
    }
)
_FLOAT_FIELDS = frozenset({"similarity", "confidence", "score", "text_score", "recall_estimate"})


def text(value: Any) -> str:
    """bytes -> str (UTF-8, surrogateescape); str as it is (a decode_responses client)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return str(value)


def optional_text(value: Any) -> str | None:
    return None if value is None else text(value)


def _field_value(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name in _INT_FIELDS:
        return int(value)
    if name in _FLOAT_FIELDS:
        return float(value)
    if name == "vector":
        return value if isinstance(value, bytes) else text(value).encode("utf-8", "surrogateescape")
    if name == "meta":
        raw = text(value)
        try:
            return json.loads(raw)
        except ValueError:  # the server stores valid JSON; keep anything else as text
            return raw
    return text(value)


def pairs(reply: Any) -> list[tuple[Any, Any]]:
    """A RESP3 map or a RESP2 flat ``field, value ...`` array as (field, value) pairs."""
    if isinstance(reply, Mapping):
        return list(reply.items())
    items = list(reply)
    return list(zip(items[0::2], items[1::2], strict=True))


def record(reply: Any) -> Record | None:
    """One record (turn, fact, event, summary, info block) -> dict, or None for null."""
    if reply is None:
        return None
    result: Record = {}
    for raw_name, value in pairs(reply):
        name = text(raw_name)
        result[name] = _field_value(name, value)
    return result


def records(reply: Any) -> list[Record]:
    return [r for r in (record(item) for item in reply or ()) if r is not None]


def ok(reply: Any) -> bool | None:
    """``+OK`` -> True; null (an NX/XX condition not met) -> None."""
    if reply is None:
        return None
    return text(reply) == "OK"


def integer(reply: Any) -> int:
    return int(reply)


def optional_integer(reply: Any) -> int | None:
    return None if reply is None else int(reply)


def boolean(reply: Any) -> bool:
    return bool(int(reply))


def text_list(reply: Any) -> list[str | None]:
    return [optional_text(item) for item in reply or ()]


def text_map(reply: Any) -> dict[str, str]:
    return {text(k): text(v) for k, v in pairs(reply or [])}


def cursor_and_ids(reply: Any) -> tuple[str, list[str]]:
    cursor, ids = reply
    return text(cursor), [text(i) for i in ids]


def cursor_and_records(reply: Any) -> tuple[str, list[Record]]:
    cursor, items = reply
    return text(cursor), records(items)


def work_set(reply: Any, merge: str | None = None, **_options: Any) -> bool | str | None:
    """Without MERGE ``+OK`` (True) or null; with MERGE the new stored value."""
    if merge is None or merge.upper() == "REPLACE":
        return ok(reply)
    return optional_text(reply)


def _reply_only(decode: Callable[[Any], Any]) -> Callable[..., Any]:
    """A callback that ignores the per-call options redis-py passes along (e.g. inside EXEC)."""

    def callback(reply: Any, **_options: Any) -> Any:
        return decode(reply)

    callback.__name__ = decode.__name__
    return callback


_DECODERS: dict[str, Callable[[Any], Any]] = {
    "AMEM.CONV.CREATE": ok,
    "AMEM.CONV.APPEND": integer,
    "AMEM.CONV.WINDOW": records,
    "AMEM.CONV.LEN": integer,
    "AMEM.CONV.INFO": record,
    "AMEM.CONV.DEL": integer,
    "AMEM.SEM.CREATE": ok,
    "AMEM.SEM.STORE": optional_integer,
    "AMEM.SEM.RECALL": records,
    "AMEM.SEM.SEARCH": records,
    "AMEM.SEARCH": records,
    "AMEM.SEM.GET": record,
    "AMEM.SEM.DEL": integer,
    "AMEM.SEM.LIST": cursor_and_records,
    "AMEM.SEM.INFO": record,
    "AMEM.SEM.DROP": boolean,
    "AMEM.WORK.GET": optional_text,
    "AMEM.WORK.MGET": text_list,
    "AMEM.WORK.DEL": integer,
    "AMEM.WORK.GETALL": text_map,
    "AMEM.WORK.LEN": integer,
    "AMEM.WORK.TTL": integer,
    "AMEM.WORK.EXPIRE": boolean,
    "AMEM.WORK.CLEAR": integer,
    "AMEM.EPIS.LOG": text,
    "AMEM.EPIS.QUERY": records,
    "AMEM.EPIS.LEN": integer,
    "AMEM.EPIS.TRIM": integer,
    "AMEM.EPIS.DEL": boolean,
    "AMEM.SUMMARY.SET": integer,
    "AMEM.SUMMARY.APPEND": integer,
    "AMEM.SUMMARY.GET": record,
    "AMEM.SUMMARY.DEL": boolean,
    "AMEM.SCAN": cursor_and_ids,
}

#: AMEM command name -> response callback
RESPONSE_CALLBACKS: dict[str, Callable[..., Any]] = {
    **{name: _reply_only(decode) for name, decode in _DECODERS.items()},
    "AMEM.WORK.SET": work_set,
}
