"""A similarity search of a vector set (VSIM, VSIM.SEARCH): planned on the loop thread,
run on any thread (hnswlib releases the GIL), finished on the loop thread.

The filter (a FILTER expression, VSIM.SEARCH's tags) runs inside hnswlib's graph walk
(``filter=``), so the walk goes on until it holds ``count`` matching elements; when it
reaches fewer (few match, or fewer exist) the search scans every matching element exactly,
so ``count`` matches come back whenever that many match. TRUTH scans exactly from the start.
Writes wait for searches in flight (``HnswGraph.quiesce``); :meth:`VectorSearch.finish`
leaves out elements removed or replaced meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hotkv_server.stores.vectorset import Element, VectorSetValue

Check = Callable[[Element], bool]


class VectorSearch:
    """One search of ``vset``: up to ``count`` elements nearest ``query`` passing ``check``,
    with hnswlib's distance; :meth:`run` anywhere (after ``vset.begin_breadth(breadth)``
    when on another thread), then :meth:`finish` on the loop thread."""

    __slots__ = ("breadth", "check", "count", "exact", "found", "index", "query", "vset")

    def __init__(self, vset: VectorSetValue, query: np.ndarray, count: int, breadth: int,
                 check: Check | None, exact: bool) -> None:
        self.vset = vset
        self.index = vset._index
        self.query = query
        self.count = min(count, len(vset.elements))
        # as Redis: at least COUNT, at most the elements there are
        self.breadth = max(1, min(max(breadth, count), vset.index_count()))
        self.check = check
        self.exact = exact
        self.found: list[tuple[Element, float]] = []

    def run(self) -> None:
        vset = self.vset
        if self.index is None or not vset.elements:
            return
        by_label = vset._by_label
        check = self.check
        pairs = None
        if not self.exact:
            allowed: Callable[[int], bool] | None = None
            if check is not None:

                def allowed(label: int) -> bool:
                    element = by_label[label]
                    return element is not None and check(element)

            pairs = vset.knn_search(self.query, self.count, self.breadth, allowed)
        if pairs is None:  # TRUTH, or the walk reached fewer than count matches
            elements: Any = vset.elements.values()
            labels = [e.label for e in elements if check is None or check(e)]
            pairs = vset.exact(self.query, labels, self.count)
        found = []
        for label, dist in pairs:
            element = by_label[label]
            if element is not None:
                found.append((element, dist))
        self.found = found

    def run_in_place(self) -> list[tuple[Element, float]]:
        self.vset.quiesce()
        self.run()
        return self.finish()

    def finish(self) -> list[tuple[Element, float]]:
        """The hits still current (loop thread), nearest first."""
        current = self.vset.elements
        return [(e, d) for e, d in self.found if current.get(e.name) is e]


def filter_check(predicate: Callable[[dict[str, Any]], bool]) -> Check:
    """A FILTER predicate as an element check (elements without valid attributes fail)."""

    def check(element: Element) -> bool:
        attrs = element.attributes()
        return attrs is not None and predicate(attrs)

    return check
