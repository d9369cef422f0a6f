"""The rolling summary: one text per agent with a version every update increments.

Effects (records in ``summary_effects``) carry the new version and the update time, so
replay never recounts:

* ``SummarySet`` ``["summary.set", agent, text, version, updated, upto|None]`` replaces the summary;
  ``upto`` (the last episodic event id it covers) is exactly the new value, None clears it.
* ``SummaryAppend`` ``["summary.append", agent, line, version, updated]`` adds ``line`` after a newline (no
  newline before the first line of an empty summary); ``upto`` stays.
* ``SummaryDel`` ``["summary.del", agent]`` forgets it.

There is no TTL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from hotkv_server.stores.base import Store
from hotkv_server.stores.summary_effects import SummaryAppend, SummaryDel, SummarySet


class Summary:
    """One agent's summary."""

    __slots__ = ("text", "updated", "upto", "version")

    def __init__(self, text: bytes, version: int, updated: int, upto: bytes | None) -> None:
        self.text = text
        self.version = version
        self.updated = updated
        self.upto = upto


class SummaryStore(Store):
    """Per agent one versioned summary text."""

    name = "summary"

    def __init__(self) -> None:
        self._items: dict[bytes, Summary] = {}

    # --- reads ------------------------------------------------------------------------
    def get(self, agent: bytes) -> Summary | None:
        return self._items.get(agent)

    def version(self, agent: bytes) -> int:
        """The current version; 0 when the agent has no summary yet."""
        item = self._items.get(agent)
        return 0 if item is None else item.version

    # --- effects ----------------------------------------------------------------------
    def appliers(self) -> dict[type[Any], Callable[[Any], Any]]:
        return {SummarySet: self._apply_set, SummaryAppend: self._apply_append,
                SummaryDel: self._apply_del}

    def _apply_set(self, e: SummarySet) -> int:
        self._items[e.agent] = Summary(e.text, e.version, e.updated, e.upto)
        return e.version

    def _apply_append(self, e: SummaryAppend) -> int:
        item = self._items.get(e.agent)
        line = e.line
        if item is None:
            self._items[e.agent] = Summary(line, e.version, e.updated, None)
        else:
            item.text = item.text + b"\n" + line if item.text else line
            item.version = e.version
            item.updated = e.updated
        return e.version

    def _apply_del(self, e: SummaryDel) -> int:
        return 1 if self._items.pop(e.agent, None) is not None else 0

    # --- the Store contract -------------------------------------------------------------
    def purge_expired(self, now_ms: int, limit: int) -> int:
        return 0  # summaries have no TTL

    def ids(self, now_ms: int) -> Iterator[bytes]:
        return iter(self._items)

    def exists(self, ident: bytes, now_ms: int) -> bool:
        return ident in self._items

    def clear(self) -> None:
        self._items.clear()

    def snapshot(self) -> Any:
        return [
            [agent, item.text, item.version, item.updated, item.upto]
            for agent, item in self._items.items()
        ]

    def restore(self, state: Any) -> None:
        self._items = {
            agent: Summary(text, version, updated, upto)
            for agent, text, version, updated, upto in state
        }

    def stats(self, now_ms: int) -> dict[str, int]:
        # one text per agent: objects and entries are the same count
        count = len(self._items)
        return {"objects": count, "entries": count}
