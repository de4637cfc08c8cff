"""Compiling tool argument schemas at compile time, with a closed registry.

Nothing is ever fetched: a ``$ref`` that does not point inside the schema
itself makes the schema unusable, and the plan records that argument
validation is off for that tool (with a warning), as does a schema that is
not valid JSON Schema.
"""

from __future__ import annotations

from typing import Any

__all__ = ["check_schema", "external_refs", "problem_path"]


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
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return tuple(exc.path)
    return ()


def check_schema(schema: Any) -> tuple[str, str] | None:
    """None when the schema is usable; else (rule name, message)."""
    import jsonschema
    import referencing
    import referencing.exceptions

    if not isinstance(schema, dict):
        return "schema-does-not-compile", "the argument schema must be a JSON object"
    refs = external_refs(schema)
    if refs:
        return "external-ref-in-schema", f"the schema refers to {refs[0]}, which is never fetched"
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
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
    return None
