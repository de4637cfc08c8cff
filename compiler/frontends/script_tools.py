"""Leviath's script tools: ``tools/*.rhai`` beside a blueprint, and the
user's own tools folder (``tools/`` beside their config file, as
``~/.leviath/tools`` sits beside ``~/.leviath/config.toml``).

A script declares itself in comment lines at the top of the file:

* ``// @tool <name>``: required; the name stages offer;
* ``// @description <text>``;
* ``// @param <name> <type> <required|optional> "<description>"``: one per
  argument; ``<type>`` is a JSON Schema type;
* ``// @requires <what>``: a platform filter (network, shell, filesystem).

A ``<stem>.toml`` beside ``<stem>.rhai`` replaces the directives: a
``[tool]`` table with ``name``, ``description``, ``requires`` and
``[[tool.params]]`` entries (``name``, ``type``, ``required``,
``description``, or a ``schema`` fragment used as the property as written).

The argument schema is the one Leviath advertises: an object whose
properties carry the declared type and description, and a ``required``
list. A type that is not a JSON Schema type makes a schema that does not
compile, which the compiler reports (validation is then off, as in Leviath).
A script that does not declare itself, or a ``@param`` line without its
``required``/``optional`` word, is not a tool: Leviath skips it, and Charter
reports it as ``script-tool-undeclared``.

A script that is not valid Rhai is skipped with a warning, as Leviath skips
it; the text of every other one goes into the plan, where ``charter run``
finds it for Charter's interpreter (``charter.runtime.rhai``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from charter.compiler.diagnostics import Diagnostic, Severity, Span
from charter.compiler.frontends.base import load_document
from charter.compiler.frontends.validation import InputModel, thaw
from charter.compiler.rules import diag
from charter.compiler.sources.text import read_source

__all__ = [
    "ScriptToolSource",
    "load_script_dir",
    "parse_directives",
]

_REQUIREDNESS = {"required": True, "optional": False}


@dataclass(frozen=True)
class ScriptToolSource:
    """One script tool as the compiler sees it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    display: str  # the .rhai file, as diagnostics and the plan show it
    sha256: str
    scope: str  # "agent" or "user"
    source: str = ""  # the script's text, which the plan carries so the runtime reads no file
    override: str | None = None  # the <stem>.toml that replaced the directives
    requires: tuple[str, ...] = ()
    # Where each declared parameter's schema was written, for diagnostics
    # about it: (file, line, col) of the @param line or the [[tool.params]].
    where: Span = field(default_factory=lambda: Span(""))


@dataclass(frozen=True)
class _Param:
    name: str
    schema: dict[str, Any]
    required: bool


class _TomlParam(InputModel):
    name: Annotated[str, Field(min_length=1)]
    type: str | None = None
    required: bool = False
    description: str = ""
    # A JSON Schema fragment used as the property as written.
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")


class _TomlTool(InputModel):
    name: Annotated[str, Field(min_length=1)]
    description: str = ""
    params: tuple[_TomlParam, ...] = ()
    requires: tuple[str, ...] = ()


class _TomlDoc(InputModel):
    tool: _TomlTool


def _undeclared(message: str, span: Span) -> Diagnostic:
    return diag("script-tool-undeclared", message, span)


def parse_directives(
    text: str, display: str
) -> tuple[tuple[str, str, list[_Param], tuple[str, ...]] | None, list[Diagnostic]]:
    """(name, description, params, requires) from a script's comment
    directives, or None with the reason it declares no tool."""
    name: str | None = None
    description = ""
    params: list[_Param] = []
    requires: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped.startswith("//"):
            continue
        rest = stripped[2:].strip()
        if not rest.startswith("@"):
            continue
        keyword, _, arg = rest[1:].partition(" ")
        arg = arg.strip()
        col = line.index("@") + 1
        here = Span(display, number, col)
        if keyword == "tool":
            if not arg:
                return None, [_undeclared("'// @tool' names no tool", here)]
            name = arg
        elif keyword == "description":
            description = arg
        elif keyword == "param":
            parts = arg.split(None, 3)
            if len(parts) < 3:
                return None, [
                    _undeclared(
                        f"'@param {arg}' needs '<name> <type> <required|optional>'; Leviath "
                        "skips the whole script",
                        here,
                    )
                ]
            pname, ptype, need = parts[:3]
            if need not in _REQUIREDNESS:
                return None, [
                    _undeclared(
                        f"'@param {pname}' says '{need}' where 'required' or 'optional' belongs; "
                        "Leviath skips the whole script",
                        here,
                    )
                ]
            pdesc = parts[3].strip().strip('"') if len(parts) > 3 else ""
            params.append(_Param(pname, {"type": ptype, "description": pdesc}, _REQUIREDNESS[need]))
        elif keyword == "requires":
            requires.extend(p for p in arg.replace(",", " ").split() if p)
    if name is None:
        return None, [
            _undeclared(
                "this script does not declare a tool: its first lines need '// @tool <name>'",
                Span(display, 1, 1),
            )
        ]
    return (name, description, params, tuple(requires)), []


def _schema(params: list[_Param]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {p.name: p.schema for p in params},
        "required": [p.name for p in params if p.required],
    }


def _from_toml(
    path: Path, display: str
) -> tuple[tuple[str, str, list[_Param], tuple[str, ...]] | None, list[Diagnostic]]:
    loaded = load_document(path, display, _TomlDoc, "toml", unknown_key_severity=Severity.WARNING)
    diags = list(loaded.diagnostics)
    doc = loaded.model
    if doc is None:
        diags.append(
            _undeclared(
                f"{display} replaces the script's directives but does not load, so the script "
                "is not a tool",
                Span(display, 1, 1),
            )
        )
        return None, diags
    params = []
    for p in doc.tool.params:
        if p.schema_ is not None:
            schema = thaw(p.schema_)
        else:
            schema = {"type": p.type or "", "description": p.description}
        params.append(_Param(p.name, schema, p.required))
    return (doc.tool.name, doc.tool.description, params, doc.tool.requires), diags


def _syntax_problem(text: str, display: str) -> Diagnostic | None:
    """A diagnostic when ``text`` is not a script Charter's interpreter can
    run; the tool is then skipped, as Leviath skips a script that does not
    compile."""
    from charter.runtime.rhai import RhaiSyntaxError, parse_script

    try:
        parse_script(text, display)
    except RhaiSyntaxError as exc:
        return diag(
            "script-tool-syntax",
            f"this script tool does not compile ({exc.message}); it is skipped, as Leviath "
            "skips it",
            Span(display, exc.line, exc.col),
            severity=Severity.WARNING,
        )
    return None


def load_script_dir(
    folder: Path, display_prefix: str, scope: str
) -> tuple[list[ScriptToolSource], list[Diagnostic], dict[str, tuple[str, ...]]]:
    """Every script tool in ``folder`` (not recursive), in file-name order;
    the first file declaring a name keeps it, as in Leviath. Also returns
    display path -> text lines for every file read, for renderers."""
    tools: list[ScriptToolSource] = []
    diags: list[Diagnostic] = []
    sources: dict[str, tuple[str, ...]] = {}
    taken: dict[str, str] = {}
    try:
        files = sorted(p for p in folder.iterdir() if p.suffix == ".rhai" and p.is_file())
    except OSError:
        return tools, diags, sources
    for path in files:
        display = f"{display_prefix}/{path.name}"
        src, problems = read_source(path, display)
        if src is None:
            diags.extend(problems)
            continue
        sources[display] = tuple(src.text.splitlines())
        override = path.with_suffix(".toml")
        override_display: str | None = None
        if override.is_file():
            override_display = f"{display_prefix}/{override.name}"
            parsed, more = _from_toml(override, override_display)
        else:
            parsed, more = parse_directives(src.text, display)
        diags.extend(more)
        if parsed is None:
            continue
        name, description, params, requires = parsed
        if name in taken:
            diags.append(
                diag(
                    "duplicate-definition",
                    f"script tool '{name}' is also declared by {taken[name]}, which Leviath "
                    "keeps; this file is not used",
                    Span(display, 1, 1),
                    severity=Severity.WARNING,
                )
            )
            continue
        problem = _syntax_problem(src.text, display)
        if problem is not None:
            diags.append(problem)
            continue
        taken[name] = display
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        tools.append(
            ScriptToolSource(
                name=name,
                description=description,
                input_schema=_schema(params),
                display=display,
                sha256=digest,
                source=src.text,
                scope=scope,
                override=override_display,
                requires=requires,
                where=Span(override_display or display, 1, 1),
            )
        )
    return tools, diags, sources
