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

from typing import Any

from hotkv_server.stores.base import TimelessStore, applies
from hotkv_server.stores.summary_effects import SummaryAppend, SummaryDel, SummarySet


class Summary:
    """One agent's summary."""

    __slots__ = ("text", "updated", "upto", "version")

    def __init__(self, text: bytes, version: int, updated: int, upto: bytes | None) -> None:
        self.text = text
        self.version = version
        self.updated = updated
        self.upto = upto


class SummaryStore(TimelessStore[Summary]):
    """Per agent one versioned summary text."""

    name = "summary"

    # --- reads ------------------------------------------------------------------------
    def get(self, agent: bytes) -> Summary | None:
        return self.objects.get(agent)

    def version(self, agent: bytes) -> int:
        """The current version; 0 when the agent has no summary yet."""
        item = self.objects.get(agent)
        return 0 if item is None else item.version

    # --- effects ----------------------------------------------------------------------
    @applies(SummarySet)
    def _apply_set(self, e: SummarySet) -> int:
        self.objects[e.agent] = Summary(e.text, e.version, e.updated, e.upto)
        return e.version

    @applies(SummaryAppend)
    def _apply_append(self, e: SummaryAppend) -> int:
        item = self.objects.get(e.agent)
        line = e.line
        if item is None:
            self.objects[e.agent] = Summary(line, e.version, e.updated, None)
        else:
            item.text = item.text + b"\n" + line if item.text else line
            item.version = e.version
            item.updated = e.updated
        return e.version

    @applies(SummaryDel)
    def _apply_del(self, e: SummaryDel) -> int:
        return 1 if self.objects.pop(e.agent, None) is not None else 0

    # --- the Store contract (ids, snapshot rows: TimelessStore) -------------------------
    def _row(self, obj: Summary) -> list[Any]:
        return [obj.text, obj.version, obj.updated, obj.upto]

    def load_id(self, ident: bytes, state: Any) -> None:
        self.objects[ident] = Summary(*state)

    def stats(self, now_ms: int) -> dict[str, int]:
        # one text per agent: objects and entries are the same count
        count = len(self.objects)
        return {"objects": count, "entries": count}
