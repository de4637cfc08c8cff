"""field_values gives a record's own fields, one level deep, for both kinds of
record the package defines: dataclasses and NamedTuples."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from charter.runtime.records import field_values


class _Inner(NamedTuple):
    x: int


class _Point(NamedTuple):
    name: str
    inner: _Inner
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Base:
    name: str
    inner: _Inner


@dataclass(frozen=True)
class _Derived(_Base):
    extra: int = 0


def test_named_tuple_fields_in_order_and_not_recursed() -> None:
    inner = _Inner(1)
    got = field_values(_Point("p", inner))
    assert list(got) == ["name", "inner", "tags"]
    assert got["inner"] is inner
    assert got == {"name": "p", "inner": inner, "tags": ()}


def test_dataclass_fields_in_order_and_not_recursed() -> None:
    inner = _Inner(2)
    got = field_values(_Derived("d", inner, 3))
    assert list(got) == ["name", "inner", "extra"]
    assert got["inner"] is inner


def test_of_limits_to_the_base_class_fields() -> None:
    assert field_values(_Derived("d", _Inner(2), 3), of=_Base) == {"name": "d", "inner": _Inner(2)}
