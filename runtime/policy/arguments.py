"""Checking a call's arguments against the schema its plan advertised: the
one entry point, :func:`check_arguments`.

A call's arguments must be a JSON object holding only Unicode text, and fit
the tool's schema. Each distinct schema text is compiled once into a
:class:`SchemaCheck`: a jsonschema validator built with a closed
``referencing.Registry()`` (a ``$ref`` to anything outside the schema itself
fails to resolve instead of fetching from the network or the disk), and,
for the flat object schemas most tools have, a quick predicate
(:func:`fast_check`) that answers "certainly valid" in about a microsecond
so a call it accepts never even imports jsonschema. Anything the quick check
is not sure of goes to the full validator, which also words the violations.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal, NamedTuple

__all__ = ["ArgumentRefusal", "SchemaCheck", "check_arguments", "fast_check"]

_MAX_VIOLATIONS = 3
_MAX_VIOLATION_TEXT = 256
# UTF-16 surrogate code points: JSON's "\ud800" escape yields one alone,
# which is no Unicode text (it cannot be encoded, logged or written).
_SURROGATE = re.compile("[\ud800-\udfff]")


# A NamedTuple, not a frozen dataclass: it is defined at every start-up, and a
# NamedTuple costs about a tenth as much to define.
class ArgumentRefusal(NamedTuple):
    """Why a call's arguments are refused: ``invalid`` arguments the model
    can correct, or a schema that makes the tool ``unavailable``."""

    status: Literal["invalid", "unavailable"]
    rule: str
    reason: str


def check_arguments(name: str, args: Any, check: SchemaCheck | None) -> ArgumentRefusal | None:
    """None when ``args`` may be passed to the tool ``name``; otherwise why
    not. ``check`` is the tool's compiled schema check (None: the plan holds
    no schema entry for it, which refuses every call)."""
    if not isinstance(args, dict):
        return ArgumentRefusal(
            "invalid",
            "arguments-not-object",
            f"invalid arguments for '{name}': the arguments must be a JSON object",
        )
    where = _lone_surrogate(args)
    if where is not None:
        return ArgumentRefusal(
            "invalid",
            "invalid-unicode",
            f"invalid arguments for '{name}': {where} holds a lone UTF-16 surrogate "
            "(such as \\ud800), which is not Unicode text; send text only",
        )
    if check is not None and check.text is None:
        return None  # validation is off for this tool by the plan's decision
    if check is None or check.unusable:
        why = check.unusable if check is not None else "the plan has no schema entry for it"
        reason = f"'{name}' cannot be called: {why}"
        return ArgumentRefusal("unavailable", "schema-unusable", reason)
    if check.fast is not None and check.fast(args):
        return None
    validator = check.validator
    if validator is None:  # unusable was checked above; never let a call through
        return ArgumentRefusal("unavailable", "schema-unusable", f"'{name}' has no validator")
    try:
        errors = list(validator.iter_errors(args))
    except Exception as exc:  # e.g. a $ref the closed registry cannot resolve
        return ArgumentRefusal(
            "unavailable",
            "schema-unusable",
            f"'{name}' cannot be called: its schema cannot be evaluated ({type(exc).__name__})",
        )
    if not errors:
        return None
    errors.sort(key=lambda e: (list(map(str, e.absolute_path)), e.message))
    shown = []
    for e in errors[:_MAX_VIOLATIONS]:
        text = f"{e.json_path}: {e.message}"
        if len(text) > _MAX_VIOLATION_TEXT:
            text = text[: _MAX_VIOLATION_TEXT - 3] + "..."
        shown.append(text)
    more = len(errors) - _MAX_VIOLATIONS
    tail = f" (and {more} more)" if more > 0 else ""
    return ArgumentRefusal(
        "invalid", "schema-violation", f"invalid arguments for '{name}': " + "; ".join(shown) + tail
    )


def _lone_surrogate(args: Mapping[str, Any]) -> str | None:
    """The JSON path of the first key or string holding a surrogate code
    point, or None. Iterative, and linear in the size of the arguments."""
    todo: list[tuple[str, Any]] = [("$", args)]
    while todo:
        path, value = todo.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return path
        elif isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str) and _SURROGATE.search(key):
                    return f"{path} (a key)"
                todo.append((f"{path}.{key}", item))
        elif isinstance(value, list | tuple):
            todo.extend((f"{path}[{n}]", item) for n, item in enumerate(value))
    return None


class SchemaCheck:
    """The argument check for one tool.

    ``off_note`` set: the plan turned validation off for the tool, and says
    why. Otherwise ``validator`` is the compiled jsonschema validator and
    ``unusable`` says why the schema could not be compiled (a call to such a
    tool is refused, fail closed). ``fast`` is a quick check for the common
    case: True means the arguments certainly fit; False hands the call to the
    full validator, which also words the violations.

    Compilation happens once: at load (``eager``), or for a one-shot decision
    (``charter check``, the hook) on first need, so a call the quick check
    accepts never even imports jsonschema.
    """

    __slots__ = ("text", "off_note", "fast", "_trusted", "_validator", "_unusable", "_built")

    def __init__(
        self, text: str | None, *, off_note: str = "", trusted: bool = False, eager: bool = True
    ) -> None:
        self.text = text
        self.off_note = off_note
        self._trusted = trusted
        self._validator: Any | None = None
        self._unusable = ""
        self._built = text is None
        self.fast: Callable[[Any], bool] | None = None
        if text is not None:
            try:
                self.fast = fast_check(json.loads(text))
            except ValueError:
                self.fast = None
            if eager:
                self._build()

    def _build(self) -> None:
        if self._built:
            return
        self._built = True
        assert self.text is not None
        self._validator, self._unusable = _compile_validator(self.text, trusted=self._trusted)
        if self._unusable:
            self.fast = None

    @property
    def validator(self) -> Any | None:
        self._build()
        return self._validator

    @property
    def unusable(self) -> str:
        # A catalog schema is known to compile; asking costs nothing until
        # the full validator is needed.
        if self._trusted and not self._built:
            return ""
        self._build()
        return self._unusable


def _compile_validator(text: str, *, trusted: bool = False) -> tuple[Any | None, str]:
    """A jsonschema validator for ``text``, or None and the reason it cannot be built."""
    # Imported here: deciding a call the quick check accepts never loads jsonschema.
    from jsonschema import SchemaError, validators
    from referencing import Registry

    try:
        schema = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"the plan's schema is not JSON ({exc.msg})"
    if not isinstance(schema, dict):
        return None, "the plan's schema is not a JSON object"
    try:
        cls = validators.validator_for(schema, default=validators.Draft202012Validator)
        if not trusted:
            # Checking a schema against its meta-schema costs milliseconds; the
            # built-in catalog's schemas are package data checked by its own
            # tests, so only other schemas (authored, MCP) pay for it.
            cls.check_schema(schema)
        # A closed, empty registry: no remote or file retrieval for $ref.
        return cls(schema, registry=Registry()), ""
    except SchemaError as exc:
        return None, f"the plan's schema is invalid: {exc.message}"
    except Exception as exc:  # any compile failure must refuse, not crash the gate
        return None, f"the plan's schema cannot be compiled: {exc}"


# -- the quick argument check ----------------------------------------------------
#
# jsonschema walks a schema through generic keyword dispatch, about 20 us for
# read_file's three properties. Most tool schemas use a handful of keywords on
# flat objects, so those get a compiled predicate that answers "certainly
# valid" in about a microsecond. It is conservative by construction: a schema
# with any keyword or shape it does not model gets no quick check, and any
# value it does not recognise makes it answer False, which hands the call to
# the full validator. It therefore never accepts what jsonschema would refuse.

_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$comment"})
_Pred = Callable[[Any], bool]


def _ident(v: int) -> int:
    return v


def _bound(checks: list[_Pred], value: Any, measure: Callable[[Any], int], low: bool) -> bool:
    """Add a lower or upper bound check; False when the bound is not an integer."""
    if value is None:
        return True
    if type(value) is not int:
        return False
    n: int = value
    checks.append((lambda v: measure(v) >= n) if low else (lambda v: measure(v) <= n))
    return True


def _scalar(schema: Any) -> _Pred | None:
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    keys = set(schema) - _ANNOTATIONS
    checks: list[_Pred] = []
    if kind == "string":
        if not keys <= {"type", "minLength", "maxLength", "pattern", "enum"}:
            return None
        checks.append(lambda v: isinstance(v, str))
        if not (
            _bound(checks, schema.get("minLength"), len, True)
            and _bound(checks, schema.get("maxLength"), len, False)
        ):
            return None
        if "pattern" in schema:
            try:
                # jsonschema itself matches "pattern" with re.search.
                rx = re.compile(schema["pattern"])
            except (re.error, TypeError):
                return None
            checks.append(lambda v: rx.search(v) is not None)
        if "enum" in schema:
            enum = schema["enum"]
            if not isinstance(enum, list) or not all(isinstance(e, str) for e in enum):
                return None
            allowed = frozenset(enum)
            checks.append(lambda v: v in allowed)
    elif kind == "integer":
        if not keys <= {"type", "minimum", "maximum", "enum"}:
            return None
        checks.append(lambda v: type(v) is int)  # bool is not an integer here
        if not (
            _bound(checks, schema.get("minimum"), _ident, True)
            and _bound(checks, schema.get("maximum"), _ident, False)
        ):
            return None
        if "enum" in schema:
            enum = schema["enum"]
            if not isinstance(enum, list) or not all(type(e) is int for e in enum):
                return None
            allowed_i = frozenset(enum)
            checks.append(lambda v: v in allowed_i)
    elif kind == "boolean":
        if keys != {"type"}:
            return None
        checks.append(lambda v: type(v) is bool)
    elif kind == "array":
        if not keys <= {"type", "items", "minItems", "maxItems", "uniqueItems"}:
            return None
        item = _scalar(schema["items"]) if "items" in schema else None
        if "items" in schema and item is None:
            return None
        if schema.get("uniqueItems") is True and schema.get("items", {}).get("type") != "string":
            return None  # uniqueness of mixed JSON values is the full validator's job
        checks.append(lambda v: isinstance(v, list))
        if not (
            _bound(checks, schema.get("minItems"), len, True)
            and _bound(checks, schema.get("maxItems"), len, False)
        ):
            return None
        if item is not None:
            each = item
            checks.append(lambda v: all(each(x) for x in v))
        if schema.get("uniqueItems") is True:
            checks.append(lambda v: len(set(v)) == len(v))
    else:
        return None
    return lambda v: all(c(v) for c in checks)


def fast_check(schema: Any) -> _Pred | None:
    """A conservative predicate for a flat object schema, or None."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return None
    keys = set(schema) - _ANNOTATIONS
    if not keys <= {"type", "properties", "required", "additionalProperties", "$schema"}:
        return None
    extra_ok = schema.get("additionalProperties", True)
    if not isinstance(extra_ok, bool):
        return None
    props_raw = schema.get("properties", {})
    required = schema.get("required", [])
    if not isinstance(props_raw, dict) or not isinstance(required, list):
        return None
    props: dict[str, _Pred] = {}
    for name, sub in props_raw.items():
        pred = _scalar(sub)
        if pred is None:
            return None
        props[name] = pred
    need = tuple(required)

    def check(args: Any) -> bool:
        if type(args) is not dict:
            return False
        for n in need:
            if n not in args:
                return False
        for k, v in args.items():
            pred = props.get(k)
            if pred is None:
                if not extra_ok:
                    return False
                continue
            if not pred(v):
                return False
        return True

    return check
