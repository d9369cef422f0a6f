"""``Watched``: an attribute whose every assignment tells its owner (a property with a hook).

The AOF writer's open file (listed as an effect sink while there is one) and the replication
backlog (likewise) are such attributes. (Not in a module of the compiled hot path: a native
class takes no such descriptor; Core computes its ``gated`` from plain fields instead.) Reading one costs what reading a property does, less
a Python frame: the getter is an ``operator.attrgetter`` of the attribute that holds the value.
"""

from __future__ import annotations

from operator import attrgetter
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

T = TypeVar("T")


class Watched(property, Generic[T]):
    """``name = Watched("_name", "_hook")``: the value lives in ``obj._name`` (the owner's
    ``__init__`` sets it there, without the hook); ``obj.name = v`` stores it, then calls
    ``obj._hook(v)``."""

    def __init__(self, slot: str, hook: str) -> None:
        def assign(obj: Any, value: T) -> None:
            setattr(obj, slot, value)
            getattr(obj, hook)(value)

        super().__init__(attrgetter(slot), assign)

    if TYPE_CHECKING:
        @overload
        def __get__(self, obj: None, owner: type | None = None) -> Watched[T]: ...
        @overload
        def __get__(self, obj: object, owner: type | None = None) -> T: ...
        def __get__(self, obj: object, owner: type | None = None) -> Any: ...
        def __set__(self, obj: object, value: T) -> None: ...
