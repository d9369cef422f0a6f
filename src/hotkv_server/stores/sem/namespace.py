"""A semantic namespace, whole: its state and writes (``core``), RECALL (``recall``), SEARCH
(``fusion``) and the self-check's result (``selfcheck``)."""

from __future__ import annotations

from hotkv_server.stores.sem.fusion import NamespaceSearch
from hotkv_server.stores.sem.selfcheck import RecallCheck


class Namespace(NamespaceSearch):
    """One namespace: settings, the HNSW index, and the facts beside it; RECALL, SEARCH and
    the recall self-check's result."""

    def record_recall_check(self, check: RecallCheck, now_ms: int) -> bool:
        """Keep the result of a finished self-check (INFO's recall fields); False when the
        check was abandoned."""
        result = check.result()
        if result is None:
            return False
        self.recall_estimate, self.recall_sample = result
        self.recall_checked = now_ms
        self.recall_version = check.version
        return True
