"""Effect records of the VSIM snapshot store (``hotkv_server.stores.vsnap``)."""

from __future__ import annotations

from typing import ClassVar

from hotkv_server.stores.effect import Effect, declare


class VsnapSave(Effect):
    """Store ``blob`` under the snapshot name ``name`` (VSIM.SAVE), replacing any."""

    op: ClassVar[str] = "vsnap.save"

    def __init__(self, name: bytes, blob: bytes) -> None:
        self.name, self.blob = name, blob


class VsnapDrop(Effect):
    """Forget the snapshot ``name`` (VSIM.DROP); returns 1, or 0 when there was none."""

    op: ClassVar[str] = "vsnap.drop"

    def __init__(self, name: bytes) -> None:
        self.name = name


RECORDS = declare(VsnapSave, VsnapDrop)
