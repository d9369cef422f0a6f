"""HotKV's VSIM snapshots (VSIM.SAVE / LOAD / LIST / DROP): named blobs a client saves and
loads back (``hotkv-client``'s ``vsim_save`` ...), an id space of its own beside the keyspace
(a snapshot name is routed like a key in a cluster, but is not a key: KEYS and DBSIZE do not
see it). The server keeps the bytes as given; they persist and replicate as effects."""

from __future__ import annotations

from typing import Any

from hotkv_server.stores.base import TimelessStore, applies
from hotkv_server.stores.vsnap_effects import VsnapDrop, VsnapSave


class VsimSnapshotStore(TimelessStore[bytes]):
    """Snapshot name -> blob; the snapshot is ``[[name, blob], ...]``."""

    name = "vsnap"
    nested_rows = True

    @property
    def blobs(self) -> dict[bytes, bytes]:
        """Snapshot name -> blob (the store's ``objects``)."""
        return self.objects

    @applies(VsnapSave)
    def _apply_save(self, e: VsnapSave) -> int:
        self.objects[e.name] = e.blob
        return len(e.blob)

    @applies(VsnapDrop)
    def _apply_drop(self, e: VsnapDrop) -> int:
        return 1 if self.objects.pop(e.name, None) is not None else 0

    def _row(self, obj: bytes) -> bytes:
        return obj

    def load_id(self, ident: bytes, state: Any) -> None:
        self.objects[ident] = state

    def stats(self, now_ms: int) -> dict[str, int]:
        return {"objects": len(self.objects), "entries": len(self.objects)}
