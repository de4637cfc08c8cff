"""Argument schemas written by users, as the plan carries them: canonical
JSON text, checked once per distinct schema; one that cannot be used either
refuses every call or turns validation off, and says which."""

from __future__ import annotations

import functools
import json
from typing import Any

from charter.compiler.diagnostics import Span, format_key_path
from charter.compiler.frontends.validation import thaw
from charter.compiler.resolve.context import AgentContext
from charter.compiler.resolve.schemacheck import check_schema, problem_path
from charter.compiler.rules import diag
from charter.compiler.sources.sourcemap import SourceMap

__all__ = ["ints_only", "schema_at", "schema_text", "user_schema"]


def schema_at(ctx: AgentContext, schema: Any, where: Span) -> tuple[str | None, str]:
    """:func:`user_schema` for a schema built from a file without a source map
    (a script's directives): a problem is reported at the file."""
    text = schema_text(thaw(schema))
    problem = _checked(text)
    if problem is None:
        return text, ""
    name, message = problem
    # As for every other schema (see user_schema): one that does not compile stays
    # in the plan so the runtime refuses every call; only an external $ref
    # turns validation off.
    if name == "schema-does-not-compile":
        ctx.diags.append(diag(name, message + "; every call to this tool is refused", where))
        return text, ""
    ctx.diags.append(diag(name, message + "; argument validation is off for this tool", where))
    return None, message


def user_schema(
    ctx: AgentContext, schema: Any, smap: SourceMap | None, path: tuple[str | int, ...]
) -> tuple[str | None, str]:
    schema = thaw(schema)
    text = schema_text(schema)
    problem = _checked(text)
    if problem is None:
        return text, ""
    name, message = problem
    # A schema that does not compile stays in the plan, where the runtime
    # refuses every call to the tool (its arguments cannot be checked); only
    # a schema needing an external $ref turns validation off, since the
    # validator never fetches anything.
    fails_closed = name == "schema-does-not-compile"
    consequence = (
        "every call to this tool is refused"
        if fails_closed
        else "argument validation is off for this tool"
    )
    if smap is not None:
        ctx.diags.append(
            diag(
                name,
                f"{message}; {consequence}",
                smap.value_span((*path, *problem_path(schema))),
                key_path=format_key_path(path),
            )
        )
    if fails_closed:
        return text, ""
    return None, message


def schema_text(schema: Any) -> str:
    """A user's schema as canonical JSON text. It is a string inside the plan,
    so a fractional number in it (``minimum: 0.5``) is text, not a float in
    the plan body; whole floats are written as integers."""
    return json.dumps(ints_only(schema), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@functools.cache
def _checked(text: str) -> tuple[str, str] | None:
    # Agents often share tools; check each distinct schema once.
    return check_schema(json.loads(text))


def ints_only(value: Any) -> Any:
    """Plans hold no floats: a whole float in a schema becomes an int, any
    other float is kept as its decimal text in a string-free way the
    validator still accepts (rare; schemas use integers in practice)."""
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        return {k: ints_only(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [ints_only(v) for v in value]
    return value
