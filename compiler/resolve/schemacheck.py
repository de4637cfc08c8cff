"""Compiling tool argument schemas at compile time, with a closed registry.

Nothing is ever fetched: a ``$ref`` that does not point inside the schema
itself makes the schema unusable, and the plan records that argument
validation is off for that tool (with a warning), as does a schema that is
not valid JSON Schema.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["certainly_valid", "check_schema", "external_refs", "problem_path"]


def external_refs(schema: Any) -> list[str]:
    found: list[str] = []
    stack = [schema]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            for key, value in v.items():
                if key in ("$ref", "$dynamicRef") and isinstance(value, str):
                    if not value.startswith("#"):
                        found.append(value)
                else:
                    stack.append(value)
        elif isinstance(v, list | tuple):
            stack.extend(v)
    return sorted(set(found))


def _ref_paths(schema: Any) -> list[tuple[str, tuple[str | int, ...]]]:
    """Every external reference with its key path, in document order."""
    found: list[tuple[str, tuple[str | int, ...]]] = []

    def walk(v: Any, path: tuple[str | int, ...]) -> None:
        if isinstance(v, dict):
            for key, value in v.items():
                if key in ("$ref", "$dynamicRef") and isinstance(value, str):
                    if not value.startswith("#"):
                        found.append((value, (*path, key)))
                else:
                    walk(value, (*path, key))
        elif isinstance(v, list | tuple):
            for i, item in enumerate(v):
                walk(item, (*path, i))

    walk(schema, ())
    return found


def problem_path(schema: Any) -> tuple[str | int, ...]:
    """Where in ``schema`` the problem :func:`check_schema` reports lies, as a
    key path below the schema (empty when it concerns the whole schema), so a
    diagnostic can point at that line instead of the top of the schema."""
    import jsonschema

    refs = external_refs(schema)
    if refs:
        return next(path for value, path in _ref_paths(schema) if value == refs[0])
    if not isinstance(schema, dict):
        return ()
    if "$schema" in schema and not isinstance(schema["$schema"], str):
        return ("$schema",)
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return tuple(exc.path)
    except Exception:  # noqa: BLE001 - locating the problem must never crash the linter
        return ()
    return ()


_DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
_TYPES = frozenset({"null", "boolean", "object", "array", "number", "string", "integer"})
# Keywords whose value is one schema, a non-empty list of schemas, or an
# object of schemas.
_ONE = frozenset(
    {
        "additionalProperties", "items", "not", "if", "then", "else", "contains",
        "propertyNames", "contentSchema", "unevaluatedItems", "unevaluatedProperties",
    }
)  # fmt: skip
_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_MAP = frozenset({"properties", "dependentSchemas"})
_STRING = frozenset(
    {"title", "description", "format", "$comment", "contentEncoding", "contentMediaType"}
)
_COUNT = frozenset(
    {
        "maxLength", "minLength", "maxItems", "minItems", "maxContains", "minContains",
        "maxProperties", "minProperties",
    }
)  # fmt: skip
_NUMBER = frozenset({"maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum"})
_BOOL = frozenset({"uniqueItems", "deprecated", "readOnly", "writeOnly"})
_ANY = frozenset({"const", "default"})
_ARRAY = frozenset({"enum", "examples"})


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _regex(v: Any) -> bool:
    if not isinstance(v, str):
        return False
    try:
        re.compile(v)
    except re.error:
        return False
    return True


def _unique_strings(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v) and len(set(v)) == len(v)


def certainly_valid(schema: Any) -> bool:
    """True when ``schema`` is certainly a valid draft 2020-12 schema that
    needs no reference resolution, judged without importing jsonschema
    (about 65 ms of a cold start). It knows the common keywords and their
    value shapes exactly as the meta-schema states them; anything else
    (``$ref``, ``$id``, ``$defs``, another ``$schema``, an unknown keyword, a
    float where a count goes) answers False, and the caller asks jsonschema.
    False never means invalid."""
    stack: list[Any] = [schema]
    seen = 0
    while stack:
        node = stack.pop()
        seen += 1
        if seen > 10_000:
            return False
        if isinstance(node, bool):
            continue
        if not isinstance(node, dict):
            return False
        for key, value in node.items():
            if key in _ONE:
                stack.append(value)
            elif key in _LIST:
                if not isinstance(value, list) or not value:
                    return False
                stack.extend(value)
            elif key in _MAP:
                if not isinstance(value, dict):
                    return False
                stack.extend(value.values())
            elif key == "patternProperties":
                if not isinstance(value, dict) or not all(_regex(k) for k in value):
                    return False
                stack.extend(value.values())
            elif key == "type":
                if isinstance(value, str):
                    if value not in _TYPES:
                        return False
                elif not (
                    isinstance(value, list)
                    and value
                    and all(isinstance(t, str) and t in _TYPES for t in value)
                    and len(set(value)) == len(value)
                ):
                    return False
            elif key in _STRING:
                if not isinstance(value, str):
                    return False
            elif key in _COUNT:
                if not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
                    return False
            elif key in _NUMBER:
                if not _number(value):
                    return False
            elif key == "multipleOf":
                if not (_number(value) and value > 0):
                    return False
            elif key in _BOOL:
                if not isinstance(value, bool):
                    return False
            elif key in _ARRAY:
                if not isinstance(value, list):
                    return False
            elif key in _ANY:
                continue
            elif key == "required":
                if not _unique_strings(value):
                    return False
            elif key == "dependentRequired":
                if not (
                    isinstance(value, dict) and all(_unique_strings(v) for v in value.values())
                ):
                    return False
            elif key == "pattern":
                if not _regex(value):
                    return False
            elif key == "$schema":
                if node is not schema or value != _DRAFT_2020_12:
                    return False
            else:
                return False
    return True


def check_schema(schema: Any) -> tuple[str, str] | None:
    """None when the schema is usable; else (rule name, message)."""
    if isinstance(schema, dict) and certainly_valid(schema):
        return None
    import jsonschema
    import referencing
    import referencing.exceptions

    if not isinstance(schema, dict):
        return "schema-does-not-compile", "the argument schema must be a JSON object"
    refs = external_refs(schema)
    if refs:
        return "external-ref-in-schema", f"the schema refers to {refs[0]}, which is never fetched"
    if "$schema" in schema and not isinstance(schema["$schema"], str):
        # jsonschema itself raises TypeError on this, not SchemaError.
        return "schema-does-not-compile", "$schema must be a string: the URI of a JSON Schema draft"
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        # Resolving every local reference once proves the schema compiles.
        validator = cls(schema, registry=referencing.Registry())
        validator.is_valid({})
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.path)
        return (
            "schema-does-not-compile",
            f"invalid schema{' at ' + where if where else ''}: {exc.message}",
        )
    except referencing.exceptions.Unresolvable as exc:  # jsonschema wraps it in a subclass
        return "schema-does-not-compile", f"unresolvable reference: {exc}"
    except Exception as exc:  # noqa: BLE001 - a schema must never crash the linter
        return "schema-does-not-compile", f"the schema cannot be compiled: {type(exc).__name__}"
    return None
