"""The rolling summary: one text per agent with a version every update increments.

Effects carry the new version and the update time, so replay never recounts:

* ``["summary.set", agent, text, version, updated, upto|None]`` replaces the summary;
  ``upto`` (the last episodic event id it covers) is exactly the new value, None clears it.
* ``["summary.append", agent, line, version, updated]`` adds ``line`` after a newline (no
  newline before the first line of an empty summary); ``upto`` stays.
* ``["summary.del", agent]`` forgets it.

There is no TTL.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hotkv_server.stores.base import Effect, EffectError, Store


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
    def apply(self, effect: Effect) -> Any:
        op = effect[0]
        if op == "summary.set":
            _, agent, text, version, updated, upto = effect
            self._items[agent] = Summary(text, version, updated, upto)
            return version
        if op == "summary.append":
            _, agent, line, version, updated = effect
            item = self._items.get(agent)
            if item is None:
                self._items[agent] = Summary(line, version, updated, None)
            else:
                item.text = item.text + b"\n" + line if item.text else line
                item.version = version
                item.updated = updated
            return version
        if op == "summary.del":
            return 1 if self._items.pop(effect[1], None) is not None else 0
        raise EffectError(f"unknown summary effect {op!r}")

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
