"""LangGraph's checkpointer conformance suite (``langgraph-checkpoint-conformance``) on the
HotKV product's checkpointer (``langgraph-checkpoint-hotkv`` 1.0.0) against a real
hotkv-server: every capability, with the async saver and with the sync one.

The checkpointer keeps checkpoints in hashes, sets and sorted sets and makes its small
steps atomic with EVAL, so this is the end-to-end check of those families and of scripting
with a client we did not write. The suite drives a saver through its ``a*`` methods; the
sync saver is driven through a subclass whose ``a*`` methods run the sync ones in a thread
(what the suite needs to call them; the sync code paths are what run).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncGenerator, Sequence
from typing import Any

import hotkv
import hotkv.asyncio
import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES
from langgraph.checkpoint.hotkv import AsyncHotKVSaver, HotKVSaver

from helpers import HotkvProcess

_prefixes = itertools.count()


class ThreadedSyncSaver(HotKVSaver):
    """The sync saver with ``a*`` methods that call the sync ones in a worker thread."""

    async def aget_tuple(self, config: Any) -> Any:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(self, config: Any, *, filter: Any = None, before: Any = None,
                    limit: Any = None) -> Any:
        items = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit)))
        for item in items:
            yield item

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: Any, writes: Sequence[Any], task_id: str,
                          task_path: str = "") -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)


def _report_text(report: Any) -> str:
    lines = []
    for name, result in sorted(report.results.items()):
        lines.append(f"{name}: detected={result.detected} passed={result.passed} "
                     f"({result.tests_passed} passed, {result.tests_failed} failed)")
        lines.extend(f"    {failure}" for failure in result.failures)
    return "\n".join(lines)


def _check(report: Any) -> None:
    text = _report_text(report)
    assert set(report.results) == {c.value for c in ALL_CAPABILITIES}, text
    total = 0
    for result in report.results.values():
        assert result.detected, text
        assert result.passed is True, text
        total += result.tests_passed
    assert total >= 81, text  # LangGraph's suite (0.0.2) has 81 tests over its 8 capabilities


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
def test_async_saver_passes_the_conformance_suite(server: HotkvProcess, protocol: int) -> None:
    url = f"hotkv://127.0.0.1:{server.port}"

    @checkpointer_test(name="AsyncHotKVSaver")
    async def factory() -> AsyncGenerator[Any, None]:
        client = hotkv.asyncio.from_url(url, resp3=protocol == 3)
        try:
            yield AsyncHotKVSaver(client, prefix=f"conformance-async-{next(_prefixes)}")
        finally:
            await client.close()

    _check(asyncio.run(validate(factory)))


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
def test_sync_saver_passes_the_conformance_suite(server: HotkvProcess, protocol: int) -> None:
    url = f"hotkv://127.0.0.1:{server.port}"

    @checkpointer_test(name="HotKVSaver")
    async def factory() -> AsyncGenerator[Any, None]:
        client = hotkv.from_url(url, resp3=protocol == 3)
        try:
            yield ThreadedSyncSaver(client, prefix=f"conformance-sync-{next(_prefixes)}")
        finally:
            client.close()

    _check(asyncio.run(validate(factory)))
