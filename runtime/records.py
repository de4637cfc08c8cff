"""A record's fields as a plain mapping, for the records that are written out
(events, audit metadata, the MCP lock) under their own field names.

:func:`dataclasses.asdict` recurses into every value and copies it, which
turns nested records into dicts and costs a deep copy; the callers here want
the values as they are, one level deep. Records are either dataclasses or
:class:`typing.NamedTuple` classes (the ones defined at every start-up are
NamedTuples, which cost far less to define), so both kinds are accepted.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["NamedTupleRecord", "field_values"]


class NamedTupleRecord(Protocol):
    """What :func:`field_values` needs of a :class:`typing.NamedTuple`: its
    field names in declaration order."""

    _fields: ClassVar[tuple[str, ...]]


def field_values(
    record: DataclassInstance | NamedTupleRecord,
    of: type[DataclassInstance] | type[NamedTupleRecord] | None = None,
) -> dict[str, Any]:
    """Each field of ``record`` under its name, in declaration order; with
    ``of`` (a record class ``record`` derives from), only the fields ``of``
    declares."""
    kind: Any = of or type(record)
    # A NamedTuple class is a tuple subclass; telling the kinds apart by that,
    # not by a ``_fields`` attribute, keeps a dataclass that happens to
    # declare one on the dataclass path.
    named_tuple = isinstance(kind, type) and issubclass(kind, tuple)
    if named_tuple:
        names: tuple[str, ...] = kind._fields
    else:
        names = tuple(f.name for f in dataclasses.fields(kind))
    return {name: getattr(record, name) for name in names}
