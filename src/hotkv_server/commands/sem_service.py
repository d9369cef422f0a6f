"""The semantic store's part of a running server: the threads that run RECALL's hnswlib
searches (:class:`SemanticService`) and the periodic recall self-check of each namespace
(:class:`RecallSelfCheck`, INFO's ``recall_*`` fields); see ``commands/sem.py`` for how
RECALL hands its search to the threads.
"""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Callable
from typing import Any

from hotkv_server.commands.embed import warm_ahead
from hotkv_server.engine.core import Subsystem
from hotkv_server.stores.sem import Namespace, RecallCheck, SemanticStore

#: the recall self-check: how often it runs a slice, how much a slice scans (vector
#: values, facts x dim: about 2 ms, mostly reading vectors back from hnswlib), and how long
#: a checked namespace waits before it is checked again (only if it changed meanwhile)
SELF_CHECK_BUDGET = 32_000
SELF_CHECK_INTERVAL_MS = 30_000

#: threads running RECALL's hnswlib searches (the machine this is tuned for has 2 cores)
SEARCH_THREADS = 2

log = logging.getLogger("hotkv")


# --- the recall self-check -------------------------------------------------------------


class RecallSelfCheck:
    """Measures each namespace's HNSW recall in the background (INFO's ``recall_*``).

    Each server cron tick (hz times a second) it scans one slice of SELF_CHECK_BUDGET vector values of the
    namespace under check (:class:`hotkv_server.stores.sem.RecallCheck`), on the event loop
    between commands, as the active expiry does; hnswlib and numpy do the work. A
    namespace is due when it changed since its last check and that check is at least
    SELF_CHECK_INTERVAL_MS old (a namespace never checked is due at once). The result is
    per process and not persisted: a restarted server or a replica measures its own.
    """

    def __init__(self, core: Any) -> None:
        self.core = core
        self.current: RecallCheck | None = None
        self.current_name = b""

    def tick(self, budget: int = SELF_CHECK_BUDGET) -> None:
        """One bounded slice of work."""
        core = self.core
        if getattr(core, "loading", False):
            return
        store: SemanticStore = core.db.sem
        now = core.clock.now_ms()
        check = self.current
        if check is not None and store.get(self.current_name) is not check.ns:
            check = self.current = None  # dropped, flushed or replaced meanwhile
        if check is None:
            # round robin from the namespace checked last, so a large namespace that is due
            # again by the time its check ends does not starve the others
            names = list(store.namespaces)
            start = names.index(self.current_name) + 1 if self.current_name in names else 0
            for name in names[start:] + names[:start]:
                ns = store.namespaces[name]
                if self.due(ns, now):
                    check = self.current = RecallCheck(ns)
                    self.current_name = name
                    break
            else:
                return
        if check.step(budget):
            self.current = None
            checked = store.get(self.current_name)  # check.ns, as the whole Namespace
            if checked is not None and not checked.record_recall_check(check, now):
                # nothing to measure (emptied): remember the version so it is not retried
                checked.recall_version = check.version

    @staticmethod
    def due(ns: Namespace, now_ms: int) -> bool:
        if len(ns.facts) < 2 or ns.version == ns.recall_version:
            return False
        return not ns.recall_checked or now_ms - ns.recall_checked >= SELF_CHECK_INTERVAL_MS


# --- the server subsystem --------------------------------------------------------------


class SemanticService(Subsystem):
    """The semantic store's part of a running server (``core.search``): the threads
    that run RECALL's hnswlib searches and the recall self-check.

    The threads start with the first RECALL that needs them; :meth:`close` (server
    shutdown) cancels the searches not started, waits for the running ones and lets any
    later RECALL search in place. :meth:`tick` runs one slice of the self-check (the server
    cron calls it hz times a second, between commands, like the active expiry).
    """

    def __init__(self, core: Any, threads: int = SEARCH_THREADS) -> None:
        self.core = core
        self.threads = threads
        self.self_check = RecallSelfCheck(core)
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self.closed = False

    def tick(self) -> None:
        self.self_check.tick()

    def submit(self, search: Callable[[], None]) -> concurrent.futures.Future[None] | None:
        """Run ``search`` on a search thread; None when closed (search in place then)."""
        if self.closed:
            return None
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=self.threads, thread_name_prefix="hotkv-recall")
        return self._pool.submit(search)

    def close(self, save: bool | None = None) -> None:
        """Server shutdown: no new searches; queued ones are cancelled (their clients get an
        error reply), running ones (milliseconds) are waited for."""
        self.closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def attach(server: Any) -> SemanticService:
    """Server subsystem hook (``Server._open_subsystems``): the search threads and the
    recall self-check on the server cron."""
    service = SemanticService(server.core)
    server.core.search = service
    # requests held behind a deferred reply: a pipelined store by text starts embedding
    server.core.lookahead = warm_ahead
    return service
