"""Turning plain data into frozen pydantic models, and pydantic's errors into
diagnostics that point at the file, line and column of the offending key or
value.

Input models follow three conventions so this module can do its job:

* they derive from :class:`InputModel` (frozen, strict, unknown keys forbidden);
* sequences are ``tuple[...]`` (data is converted from lists before validation);
* a validator that wants its own rule raises
  ``PydanticCustomError("<rule-name>", "message")`` (for ``invalid-value``, the
  rule most validators want, :func:`invalid_value` builds it); the error type
  is looked up in the rule catalog by name.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import PydanticCustomError

from charter.compiler.diagnostics import Diagnostic, Severity, did_you_mean, format_key_path
from charter.compiler.rules import diag, has_rule
from charter.compiler.sources.sourcemap import KeyPath, SourceMap
from charter.runtime.plan.vocabulary import PERMISSIONS

__all__ = [
    "InputModel",
    "freeze",
    "invalid_value",
    "ready",
    "thaw",
    "type_name",
    "validate_model",
]

M = TypeVar("M", bound=BaseModel)


class InputModel(BaseModel):
    """Base for every model read from a user's file."""

    # defer_build: a model's validator is built on first use, so a run that
    # never reads (say) a config.toml or an MCP manifest does not pay for one.
    model_config = ConfigDict(
        frozen=True, strict=True, extra="forbid", populate_by_name=False, defer_build=True
    )


def ready(model: type[M]) -> type[M]:
    """``model`` with its validator built, and those of the models it holds.

    pydantic reuses a finished sub-model's schema, but it generates a
    deferred one inline again for every parent that holds it: the blueprint
    and a stage file both hold the stage table, which holds the gate and
    transform tables, and so on: validating the coder blueprint generated
    the gate table's schema six times. Building children before parents
    generates each model's schema once (2 % of a cold `charter validate` of
    that blueprint, in instructions). A model already built costs one
    attribute check.
    """
    _build_bottom_up(model, set())
    return model


def _build_bottom_up(model: type[BaseModel], seen: set[type[BaseModel]]) -> None:
    if model.__pydantic_complete__ or model in seen:
        return  # built, or a cycle that the outer call finishes
    seen.add(model)
    for field in model.__pydantic_fields__.values():
        for sub in _models_named_by(field.annotation):
            _build_bottom_up(sub, seen)
    model.model_rebuild()


def _models_named_by(tp: Any) -> list[type[BaseModel]]:
    """The model classes in an annotation: ``X``, ``X | None``,
    ``tuple[X, ...]``, ``dict[str, X | Y]``, ``Annotated[X, ...]``."""
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [tp]
    out: list[type[BaseModel]] = []
    for arg in typing.get_args(tp):
        out.extend(_models_named_by(arg))
    return out


def invalid_value(message: str, **context: Any) -> PydanticCustomError:
    """The error a validator raises when a value breaks the ``invalid-value``
    rule; ``message`` is a template over ``context`` (``'{value}' ...``)."""
    return PydanticCustomError("invalid-value", message, context)


def freeze(value: Any) -> Any:
    """Lists become tuples (recursively), so strict tuple fields accept them
    and the validated model holds no mutable sequence."""
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    if isinstance(value, dict):
        return {k: freeze(v) for k, v in value.items()}
    return value


def thaw(value: Any) -> Any:
    """The reverse of :func:`freeze`: a fresh copy in which every tuple or
    list is a list and every dict a new dict. What a JSON Schema validator or
    an in-place edit needs from data a frozen model holds."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(v) for v in value]
    return value


_PERMISSIONS = frozenset(PERMISSIONS)
_QUOTED = re.compile(r"'([^']*)'")


def validate_model(
    model: type[M],
    data: Any,
    smap: SourceMap,
    *,
    prefix: KeyPath = (),
    unknown_key_severity: Severity | None = None,
) -> tuple[M | None, list[Diagnostic]]:
    """Validate ``data`` (found at ``prefix`` inside ``smap``'s file)."""
    try:
        return ready(model).model_validate(freeze(data)), []
    except ValidationError as exc:
        diags = [
            _to_diag(model, err, smap, prefix, unknown_key_severity)
            for err in exc.errors(include_url=False)
        ]
        return None, diags


def _to_diag(
    model: type[BaseModel],
    err: Any,
    smap: SourceMap,
    prefix: KeyPath,
    unknown_sev: Severity | None,
) -> Diagnostic:
    loc: KeyPath = tuple(p for p in err["loc"] if not _is_union_tag(p))
    full = (*prefix, *loc)
    key_path = format_key_path(full)
    etype: str = err["type"]
    msg: str = err["msg"]
    value = err.get("input")
    # A mapping key that failed its own check (pydantic ends ``loc`` with
    # "[key]") is reported at the key, not at the value next to it.
    on_key = bool(err["loc"]) and err["loc"][-1] == "[key]"
    where = smap.key_span(full) if on_key else smap.value_span(full)

    if has_rule(etype):
        return diag(etype, msg, where, key_path=key_path)
    if etype == "extra_forbidden":
        name = str(loc[-1]) if loc else "?"
        known = _fields_at(model, loc[:-1])
        hint = did_you_mean(name, known) if known else None
        message = f"unknown key '{name}'"
        if hint:
            message += f"; did you mean '{hint}'?"
        help_text = "accepted keys: " + ", ".join(sorted(known)) if known else None
        return diag(
            "unknown-key",
            message,
            smap.key_span(full),
            key_path=key_path,
            help=help_text,
            severity=unknown_sev,
        )
    if etype == "missing":
        return diag(
            "missing-key",
            f"required key '{loc[-1]}' is missing" if loc else "required value is missing",
            smap.value_span(full[:-1]),
            key_path=key_path,
        )
    if etype in ("literal_error", "enum"):
        expected = _QUOTED.findall(err.get("ctx", {}).get("expected", ""))
        shown = repr(value) if not isinstance(value, str) else f"'{value}'"
        rule_name = "invalid-permission-value" if set(expected) == _PERMISSIONS else "invalid-value"
        message = f"{shown} is not one of " + ", ".join(expected)
        if isinstance(value, str):
            hint = did_you_mean(value, expected)
            if hint:
                message += f"; did you mean '{hint}'?"
        return diag(rule_name, message, where, key_path=key_path)
    if etype.endswith(("_type", "_parsing")) or etype in (
        "is_instance_of",
        "model_type",
        "dataclass_type",
        "model_attributes_type",
    ):
        return diag(
            "wrong-type",
            f"{msg.rstrip('.')} (got {type_name(value)})",
            where,
            key_path=key_path,
        )
    if etype.startswith("value_error") or etype == "assertion_error":
        text = msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")
        return diag("invalid-value", text, where, key_path=key_path)
    return diag("invalid-value", msg, where, key_path=key_path)


def _is_union_tag(part: Any) -> bool:
    # Pydantic inserts the member type's name into ``loc`` for union errors
    # ("function-after[...]", "tagged-union[...]", "str"); those are not keys.
    return isinstance(part, str) and (
        "[" in part or part in ("str", "int", "bool", "float", "list", "dict", "tuple")
    )


# First match wins: a bool is also an int, and a str also a Sequence.
_TYPE_NAMES: tuple[tuple[type[Any], str], ...] = (
    (bool, "a boolean"),
    (int, "an integer"),
    (float, "a number"),
    (str, "a string"),
    (Mapping, "a table/mapping"),
    (Sequence, "a list"),
    (type(None), "nothing"),
)


def type_name(value: Any) -> str:
    """How a value's type reads in a message ("an integer", "a list")."""
    return next((name for t, name in _TYPE_NAMES if isinstance(value, t)), type(value).__name__)


def _fields_at(model: type[BaseModel], loc: KeyPath) -> list[str]:
    """The keys accepted at ``loc`` inside ``model``, for did-you-mean."""
    tp: Any = model
    for part in loc:
        tp = _step(tp, part)
        if tp is None:
            return []
    found = _model_in(tp)
    if found is None:
        return []
    return [f.alias or name for name, f in found.model_fields.items()]


def _model_in(tp: Any) -> type[BaseModel] | None:
    """The model ``tp`` is, possibly inside Optional, a union or Annotated."""
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return tp
    if typing.get_origin(tp) in (typing.Union, types.UnionType, typing.Annotated):
        for arg in typing.get_args(tp):
            found = _model_in(arg)
            if found is not None:
                return found
    return None


def _step(tp: Any, part: str | int) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        for arg in args:
            nxt = _step(arg, part)
            if nxt is not None:
                return nxt
        return None
    if origin is typing.Annotated:
        return _step(args[0], part)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        for name, f in tp.model_fields.items():
            if (f.alias or name) == part:
                return f.annotation
        return None
    if origin in (dict, Mapping) and args:
        return args[1]
    if origin in (tuple, list, Sequence) and args:
        return args[0]
    return None
