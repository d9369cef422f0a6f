"""Effect records: every record has an applier in its store, its wire form is the list
the AOF and the replication stream have always carried, and decoding gives it back."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import Any

import pytest

import hotkv_server
from hotkv_server import _compiled
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
from hotkv_server.stores.keyspace_effects import KvDel, KvExpire, KvMset, KvSet
from hotkv_server.stores.values import load_value_types
from hotkv_server.stores.work_effects import WorkSet

PACKAGE = Path(hotkv_server.__file__).parent
EFFECT_MODULES = [name + "_effects" for name, _ in STORE_CLASSES]


@pytest.mark.parametrize("module_name", EFFECT_MODULES)
def test_each_store_applies_exactly_the_records_it_lists(module_name: str) -> None:
    module = importlib.import_module(module_name)
    db = default_database()
    owner = module_name.rsplit(".", 1)[1].removesuffix("_effects")
    # the store's module, or its package (stores/sem/ is a package)
    store = next(s for s in db.stores.values() if type(s).__module__.split(".")[2] == owner)
    expected = set(module.RECORDS)
    if owner == "keyspace":  # and the records of every value type it holds (hashes, sets ...)
        expected |= {record for cls in load_value_types().values() for record in cls.effects}
    assert set(store.appliers()) == expected
    for record in module.RECORDS:
        assert record.op.startswith(store.name + "."), record


def _init_fields() -> dict[str, list[tuple[str, str]]]:
    """Each record class's ``__init__`` parameters and their annotations, read from the
    source (a compiled record keeps neither); checks on the way that ``__init__`` stores
    each parameter under its own name, in the parameters' order (the order a compiled
    record lists its fields in, and so its wire order)."""
    found: dict[str, list[tuple[str, str]]] = {}
    for cls in set(RECORDS.values()):
        # the module's source (a compiled module's __file__ names its .so)
        source = PACKAGE.joinpath(*cls.__module__.split(".")[1:]).with_suffix(".py")
        tree = ast.parse(source.read_text())
        node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.__name__)
        init = next((n for n in node.body if isinstance(n, ast.FunctionDef)
                     and n.name == "__init__"), None)
        if init is None:
            found[cls.__name__] = []
            continue
        params = [(a.arg, ast.unparse(a.annotation)) for a in init.args.args[1:]
                  if a.annotation is not None]
        stored = []  # (attribute, value) of `self.a, self.b = a, b` (or `self.a = a`)
        for stmt in init.body:
            if isinstance(stmt, ast.Assign):
                target, value = stmt.targets[0], stmt.value
                pairs = (zip(target.elts, value.elts, strict=True)
                         if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple)
                         else [(target, value)])
                stored += [(t.attr, v.id) for t, v in pairs
                           if isinstance(t, ast.Attribute) and isinstance(v, ast.Name)]
        assert stored == [(name, name) for name, _ in params], cls.__name__
        found[cls.__name__] = params
    return found


def _sample(annotation: str, i: int) -> Any:
    """A value of the annotated type (a compiled record checks its fields' types)."""
    kind = annotation.split(" | ")[0]
    if kind == "int":
        return i
    if kind == "float":
        return i + 0.5
    if kind == "bool":
        return bool(i % 2)
    if kind == "str":
        return f"s{i}"
    if kind.startswith("list"):
        return [f"item{i}".encode()]
    if kind.startswith("dict"):
        return {f"k{i}": i}
    return f"v{i}".encode()  # bytes, object, Any


def test_every_op_is_registered_once_and_decodes_to_its_class() -> None:
    fields_of = _init_fields()
    for op, cls in RECORDS.items():
        assert cls.op == op
        params = fields_of[cls.__name__]
        assert cls.field_names == tuple(name for name, _ in params), op
        fields = [_sample(annotation, i) for i, (_, annotation) in enumerate(params)]
        record = cls(*fields)
        assert record.wire() == [op, *fields]
        assert decode(record.wire()) == [record]
        assert repr(record).startswith(cls.__name__ + "(")


def test_records_compare_by_type_and_fields() -> None:
    assert KvSet(b"k", b"v", None) == KvSet(b"k", b"v", None)
    assert KvSet(b"k", b"v", None) != KvSet(b"k", b"v", 1)
    assert KvDel([b"k"]) != KvMset([b"k"])
    assert repr(KvSet(b"k", b"v", None)) == "KvSet(key=b'k', value=b'v', expires_at=None)"


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


def test_a_field_of_the_wrong_type_is_refused_by_a_compiled_record() -> None:
    if _compiled.COMPILED:  # the build scripts/test makes and the server runs
        with pytest.raises(EffectError, match=r"kv\.expire: a field of the wrong type"):
            decode(["kv.expire", b"k", b"soon"])
    else:  # the pure-Python fallback checks no types, as the dataclass records did not
        assert decode(["kv.expire", b"k", b"soon"]) == [KvExpire(b"k", b"soon")]  # type: ignore[arg-type]
    # a whole number where a float is declared is taken, as a float
    assert decode(["kv.zremrangebyscore", b"z", 1, False, 2.5, True])[0].wire()[2] == 1.0


def test_a_second_record_of_the_same_op_is_refused() -> None:
    with pytest.raises(TypeError, match="declared twice"):
        effect_module.declare(KvSet)
    assert RECORDS["kv.set"] is KvSet
