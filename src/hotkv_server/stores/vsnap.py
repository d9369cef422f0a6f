"""HotKV's VSIM snapshots (VSIM.SAVE / LOAD / LIST / DROP): named blobs a client saves and
loads back (``hotkv-client``'s ``vsim_save`` ...), an id space of its own beside the keyspace
(a snapshot name is routed like a key in a cluster, but is not a key: KEYS and DBSIZE do not
see it). The server keeps the bytes as given; they persist and replicate as effects."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from hotkv_server.stores.base import Store
from hotkv_server.stores.vsnap_effects import VsnapDrop, VsnapSave


class VsimSnapshotStore(Store):
    """Snapshot name -> blob."""

    name = "vsnap"

    def __init__(self) -> None:
        self.blobs: dict[bytes, bytes] = {}

    def appliers(self) -> dict[type[Any], Callable[[Any], Any]]:
        return {VsnapSave: self._apply_save, VsnapDrop: self._apply_drop}

    def _apply_save(self, e: VsnapSave) -> int:
        self.blobs[e.name] = e.blob
        return len(e.blob)

    def _apply_drop(self, e: VsnapDrop) -> int:
        return 1 if self.blobs.pop(e.name, None) is not None else 0

    def purge_expired(self, now_ms: int, limit: int) -> int:
        return 0  # snapshots have no TTL

    def ids(self, now_ms: int) -> Iterator[bytes]:
        return iter(self.blobs)

    def exists(self, ident: bytes, now_ms: int) -> bool:
        return ident in self.blobs

    def clear(self) -> None:
        self.blobs.clear()

    def snapshot(self) -> Any:
        return [[name, blob] for name, blob in self.blobs.items()]

    def restore(self, state: Any) -> None:
        self.blobs = {name: blob for name, blob in state}

    def dump_id(self, ident: bytes) -> Any:
        return self.blobs.get(ident)

    def load_id(self, ident: bytes, state: Any) -> None:
        self.blobs[ident] = state

    def drop_id(self, ident: bytes) -> None:
        self.blobs.pop(ident, None)

    def stats(self, now_ms: int) -> dict[str, int]:
        return {"objects": len(self.blobs), "entries": len(self.blobs)}
