"""Effect records: every record has an applier in its store, its wire form is the list
the AOF and the replication stream have always carried, and decoding gives it back."""

from __future__ import annotations

import importlib

import pytest

from hotkv_server.stores import effect as effect_module
from hotkv_server.stores.database import STORE_CLASSES, default_database
from hotkv_server.stores.effect import (
    RECORDS,
    EffectError,
    FlushAll,
    decode,
    pack,
    pack_group,
    pack_unit,
    unit_value,
    unpack,
)
from hotkv_server.stores.keyspace_effects import KvDel, KvMset, KvSet
from hotkv_server.stores.work_effects import WorkSet

EFFECT_MODULES = [name + "_effects" for name, _ in STORE_CLASSES]


@pytest.mark.parametrize("module_name", EFFECT_MODULES)
def test_each_store_applies_exactly_the_records_it_lists(module_name: str) -> None:
    module = importlib.import_module(module_name)
    db = default_database()
    owner = module_name.rsplit(".", 1)[1].removesuffix("_effects")
    # the store's module, or its package (stores/sem/ is a package)
    store = next(s for s in db.stores.values() if type(s).__module__.split(".")[2] == owner)
    assert set(store.appliers()) == set(module.RECORDS)
    for record in module.RECORDS:
        assert record.op.startswith(store.name + "."), record


def test_every_op_is_registered_once_and_decodes_to_its_class() -> None:
    for op, cls in RECORDS.items():
        assert cls.op == op
        fields = [f"v{i}".encode() for i in range(len(cls.field_names))]
        record = cls(*fields)
        assert record.wire() == [op, *fields]
        assert decode(record.wire()) == [record]


def test_the_wire_form_is_the_old_positional_list() -> None:
    assert KvSet(b"k", b"v", 17).wire() == ["kv.set", b"k", b"v", 17]
    assert WorkSet(b"s", b"k", b"v", None).wire() == ["work.set", b"s", b"k", b"v", None]
    assert FlushAll().wire() == ["flushall"]


def test_keys_name_the_ids_written() -> None:
    assert KvSet(b"k", b"v", None).keys() == [b"k"]
    assert KvMset([b"a", b"1", b"b", b"2"]).keys() == [b"a", b"b"]
    assert KvDel([b"x", b"y"]).keys() == [b"x", b"y"]
    assert FlushAll().keys() is None


def test_a_group_packs_to_the_same_bytes_as_the_whole_tx() -> None:
    records = [KvSet(b"k", b"v", None), KvDel([b"k"])]
    payloads = [pack(r.wire()) for r in records]
    assert pack_group(payloads) == pack(["tx", [r.wire() for r in records]])
    assert decode(unpack(pack_group(payloads))) == records
    assert pack_group(payloads[:1]) == payloads[0]


def test_records_pack_as_their_wire_lists_without_building_them() -> None:
    one = [KvSet(b"k", b"v", 5)]
    two = [KvSet(b"k", b"v", None), KvDel([b"k"])]
    assert pack_unit(unit_value(one)) == pack(["kv.set", b"k", b"v", 5])
    assert pack_unit(unit_value(two)) == pack(["tx", [r.wire() for r in two]])
    # a turn of units, as the AOF frames it: nested groups stay nested
    turn = [unit_value(one), unit_value(two)]
    assert pack_unit(["tx", turn]) == pack(["tx", [one[0].wire(), ["tx", [r.wire() for r in two]]]])
    assert decode(unpack(pack_unit(["tx", turn]))) == one + two


@pytest.mark.parametrize("value, why", [
    (["kv.nope", b"k"], "unknown effect op"),
    (["kv.set", b"k"], "kv.set takes 3 fields"),
    (["tx", "not a list"], "a tx record"),
    ("kv.set", "non-empty list"),
    ([], "non-empty list"),
])
def test_bad_wire_values_are_refused_with_the_reason(value: object, why: str) -> None:
    with pytest.raises(EffectError, match=why):
        decode(value)


def test_a_second_record_of_the_same_op_is_refused() -> None:
    with pytest.raises(TypeError, match="declared twice"):
        @effect_module.effect("kv.set")
        class Again(effect_module.Effect):
            key: bytes
