"""Effect records of the VSIM snapshot store (``hotkv_server.stores.vsnap``)."""

from __future__ import annotations

from hotkv_server.stores.effect import Effect, effect


@effect("vsnap.save")
class VsnapSave(Effect):
    """Store ``blob`` under the snapshot name ``name`` (VSIM.SAVE), replacing any."""

    name: bytes
    blob: bytes


@effect("vsnap.drop")
class VsnapDrop(Effect):
    """Forget the snapshot ``name`` (VSIM.DROP); returns 1, or 0 when there was none."""

    name: bytes


RECORDS = (VsnapSave, VsnapDrop)
