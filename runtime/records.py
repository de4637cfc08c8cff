"""A record's fields as a plain mapping, for the records that are written out
(events, audit metadata, the MCP lock) under their own field names.

:func:`dataclasses.asdict` recurses into every value and copies it, which
turns nested records into dicts and costs a deep copy; the callers here want
the values as they are, one level deep.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["field_values"]


def field_values(
    record: DataclassInstance, of: type[DataclassInstance] | None = None
) -> dict[str, Any]:
    """Each field of ``record`` under its name, in declaration order; with
    ``of`` (a dataclass ``record`` derives from), only the fields ``of``
    declares."""
    return {f.name: getattr(record, f.name) for f in dataclasses.fields(of or record)}
