"""The built-in tool catalog: every tool the runtime implements, as data.

The runtime owns this catalog because it implements the tools; the compiler
only reads it (this module never imports ``charter.compiler``). The data lives
in ``compiler/catalog/data/builtin_tools.json`` and is loaded once, lazily (see
:mod:`charter.runtime.datafiles`), so importing this module costs almost
nothing: no JSON is parsed and no :mod:`jsonschema` is imported until a caller asks.

Each entry is a :class:`BuiltinTool`, a frozen pydantic model whose fields are
strings, booleans and tuples only. Argument schemas are held as *canonical
JSON text* (sorted keys, compact separators, no floats) rather than as nested
dicts: text is immutable, hashable, and byte-stable, which is what a
content-addressed plan needs. :meth:`BuiltinTool.schema_dict` hands out a
fresh, mutable copy for callers that want a dict.

docs/builtin-tools.md documents every field, the rendering context of the
description templates, and how the two seeds' names for the same thing map
onto each other (the ``impl`` key).
"""

import functools
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from charter.runtime.datafiles import read_text
from charter.runtime.errors import CharterError
from charter.runtime.plan import ArgumentGuard, PathArg, Permission

__all__ = [
    "APPROVAL_ORDER",
    "BLOCKING_TOOLS",
    "BLUEPRINT_LOOSENABLE",
    "RISK_ORDER",
    "TOOLSETS",
    "Approval",
    "BuiltinTool",
    "CatalogError",
    "DescriptionContext",
    "Family",
    "OutputContext",
    "Permission",
    "Risk",
    "Seed",
    "builtin_tools",
    "canonical_json",
    "catalog_digest",
    "default_permission",
    "impl_siblings",
    "resolve_builtin",
    "shell_hint",
]

Risk = Literal["low", "medium", "high", "critical"]
Approval = Literal["auto", "prompt", "deny"]
# "leviath": a tool of Leviath's own runtime that seed 004 does not list
# (its environment tools and fan_out).
Seed = Literal["000", "004", "leviath"]
Family = Literal[
    "files",
    "shell",
    "context",
    "todo",
    "output",
    "human",
    "review",
    "subagent",
    "web",
    "skills",
    "tasks",
    "core",
    "schedule",
    "session",
    "meta",
    "environment",
]

# Orders used to decide which of two values is stricter (a larger rank is
# stricter). Kept here so every consumer ranks the vocabularies the same way;
# the order of permissions is charter.runtime.plan.vocabulary.RANK.
RISK_ORDER: Mapping[str, int] = MappingProxyType({"low": 0, "medium": 1, "high": 2, "critical": 3})
APPROVAL_ORDER: Mapping[str, int] = MappingProxyType({"auto": 0, "prompt": 1, "deny": 2})

# Seed 004's one exception to the blueprint clamp: research agents pre-approve
# these, and neither can write or execute anything.
BLUEPRINT_LOOSENABLE: tuple[str, ...] = ("web_search", "web_fetch")

# The permission of any name the catalog does not know (seed 004: "everything
# else, built-in or MCP"). Unknown never means allowed.
_UNKNOWN_DEFAULT: Permission = "ask"

_DATA_FILE = "builtin_tools.json"
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
# A dotted capability, optionally scoped after one colon (tool.call:evolve_core).
_CAPABILITY = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+(:[A-Za-z0-9_.-]+)?$")
_IMPL = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$")
# The fields that hold identifiers: what a message calls one value, and the
# pattern each value must match (aliases is a tuple of names, capability may
# be absent).
_IDENTIFIERS = {
    "name": ("tool name", _NAME),
    "aliases": ("alias", _NAME),
    "impl": ("impl", _IMPL),
    "capability": ("capability", _CAPABILITY),
}


class CatalogError(CharterError, RuntimeError):
    """The packaged catalog data is malformed. This is a packaging bug, never
    a user error, so it is raised rather than reported as a diagnostic."""


class OutputContext(TypedDict):
    """What a stage declared about its final output (each part may be absent)."""

    format: str | None
    instructions: str | None
    example: str | None


class DescriptionContext(TypedDict):
    """The variables every description template may use.

    ``shell``: the shell resolved for the target platform, as the model should
    read it (``/bin/bash``, ``cmd.exe /C``). ``platform``: ``windows``,
    ``linux``, ``macos`` or another lower-case OS name. ``output``: the
    stage's output declaration, or None when the stage declared none.
    ``shell_timeout_secs``: when the shell tool stops a command (the plan's
    ``limits.shell_timeout_secs``, from the config's
    ``[limits] script_shell_timeout_secs``). Templates are trusted package
    data; values are inserted as plain text and are never themselves rendered
    as templates.
    """

    shell: str
    platform: str
    output: OutputContext | None
    shell_timeout_secs: int


def canonical_json(value: Any) -> str:
    """The one JSON spelling of a value: sorted keys, no whitespace, UTF-8
    characters kept. Floats are refused because their text form is not stable
    across producers, and a content digest must be."""
    _reject_floats(value, "$")
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _reject_floats(value: Any, where: str) -> None:
    if isinstance(value, float):
        raise ValueError(f"{where}: floats are not allowed in canonical JSON")
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValueError(f"{where}: object keys must be strings")
            _reject_floats(v, f"{where}.{k}")
    elif isinstance(value, list | tuple):
        for n, v in enumerate(value):
            _reject_floats(v, f"{where}[{n}]")


def _schema_text(value: Any, *, what: str) -> str:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{what} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be a JSON object")
    return canonical_json(value)


class BuiltinTool(BaseModel):
    """One built-in tool. Deeply immutable: strings, booleans and tuples only."""

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")

    name: str = Field(description="Model-visible name, unique across the catalog.")
    aliases: tuple[str, ...] = Field(description="Other names that resolve to this tool.")
    impl: str = Field(
        description="Implementation key. Entries that share one run the same runtime code "
        "behind different model-visible names and argument shapes."
    )
    family: Family
    seeds: tuple[Seed, ...] = Field(description="Which specification seed(s) describe it.")
    summary: str = Field(description="One line for tables and `charter show`.")
    description_template: str = Field(
        description="jinja2 text rendered by the compiler with a DescriptionContext."
    )
    input_schema: str = Field(
        description="Advertised argument schema (draft 2020-12), as canonical JSON text."
    )
    input_rules: str | None = Field(
        description="Cross-field rules enforced alongside input_schema but not advertised, "
        "as canonical JSON text (see docs/builtin-tools.md)."
    )
    path_args: tuple[PathArg, ...] = Field(
        default=(),
        description="The arguments that name workspace paths, and how the tool uses each; "
        "the compiler pins them into the plan.",
    )
    guard: ArgumentGuard | None = Field(
        default=None,
        description="The runtime check that reads the arguments beyond the schema "
        "(shell, url or delegate); pinned into the plan.",
    )
    default_permission: Permission
    capability: str | None
    risk: Risk
    approval: Approval
    blocks_on_person: bool
    toolsets: tuple[str, ...]
    counts_as_work: bool
    outbound: bool
    host_only: bool

    @field_validator("input_schema", mode="before")
    @classmethod
    def _canonical_schema(cls, value: Any) -> str:
        return _schema_text(value, what="input_schema")

    @field_validator("input_rules", mode="before")
    @classmethod
    def _canonical_rules(cls, value: Any) -> str | None:
        return None if value is None else _schema_text(value, what="input_rules")

    @field_validator(*_IDENTIFIERS)
    @classmethod
    def _check_identifiers(cls, value: Any, info: ValidationInfo) -> Any:
        what, pattern = _IDENTIFIERS[str(info.field_name)]
        for item in (value,) if isinstance(value, str) else value or ():
            if not pattern.match(item):
                raise ValueError(f"{what} {item!r} must match {pattern.pattern}")
        return value

    @field_validator("seeds")
    @classmethod
    def _check_seeds(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value or len(set(value)) != len(value):
            raise ValueError("seeds must name at least one seed, each once")
        return value

    @field_validator("summary", "description_template")
    @classmethod
    def _non_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @property
    def names(self) -> tuple[str, ...]:
        """The canonical name followed by every alias."""
        return (self.name, *self.aliases)

    def schema_dict(self) -> dict[str, Any]:
        """A fresh, mutable copy of the advertised argument schema."""
        result: dict[str, Any] = json.loads(self.input_schema)
        return result

    def validation_schema(self) -> dict[str, Any]:
        """The schema a call's arguments must satisfy: the advertised schema
        and, when the tool has them, its cross-field rules (``allOf``)."""
        if self.input_rules is None:
            return self.schema_dict()
        return {"allOf": [self.schema_dict(), json.loads(self.input_rules)]}


@dataclass(frozen=True, slots=True)
class _Catalog:
    """Everything derived from the data file, built once."""

    by_name: Mapping[str, BuiltinTool]
    index: Mapping[str, BuiltinTool]
    toolsets: Mapping[str, tuple[str, ...]]
    hints: Mapping[str, str]
    digest: str
    # The tools that wait on a person, in catalog order.
    blocking: tuple[str, ...]


def _read_data() -> str:
    return read_text("charter.compiler.catalog", __file__, "data", _DATA_FILE)


def _build(text: str) -> _Catalog:
    """Parse and cross-check the catalog data. Raises CatalogError on any flaw."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CatalogError(f"{_DATA_FILE}: not valid JSON: {exc}") from None
    if not isinstance(raw, dict) or set(raw) != {
        "catalog_version",
        "toolsets",
        "shell_hints",
        "tools",
    }:
        raise CatalogError(
            f"{_DATA_FILE}: expected exactly the keys catalog_version, toolsets, "
            "shell_hints and tools"
        )
    if raw["catalog_version"] != 1:
        raise CatalogError(f"{_DATA_FILE}: unsupported catalog_version {raw['catalog_version']!r}")
    try:
        digest = hashlib.sha256(canonical_json(raw).encode("utf-8")).hexdigest()
    except ValueError as exc:
        raise CatalogError(f"{_DATA_FILE}: {exc}") from None

    toolsets_raw = raw["toolsets"]
    if not isinstance(toolsets_raw, dict) or not all(
        isinstance(k, str) and isinstance(v, list) and all(isinstance(n, str) for n in v)
        for k, v in toolsets_raw.items()
    ):
        raise CatalogError(f"{_DATA_FILE}: toolsets must map names to lists of tool names")
    membership: dict[str, list[str]] = {}
    for set_name, members in toolsets_raw.items():
        if len(set(members)) != len(members):
            raise CatalogError(f"{_DATA_FILE}: toolset {set_name!r} lists a tool twice")
        for member in members:
            membership.setdefault(member, []).append(set_name)

    hints_raw = raw["shell_hints"]
    if not isinstance(hints_raw, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in hints_raw.items()
    ):
        raise CatalogError(f"{_DATA_FILE}: shell_hints must map platforms to non-empty text")

    tools_raw = raw["tools"]
    if not isinstance(tools_raw, list):
        raise CatalogError(f"{_DATA_FILE}: tools must be a list")
    by_name: dict[str, BuiltinTool] = {}
    index: dict[str, BuiltinTool] = {}
    for n, entry in enumerate(tools_raw):
        if not isinstance(entry, dict):
            raise CatalogError(f"{_DATA_FILE}: tools[{n}] must be an object")
        label = entry.get("name", f"tools[{n}]")
        if "toolsets" in entry:
            raise CatalogError(
                f"{_DATA_FILE}: {label}: toolset membership comes from the top-level "
                "toolsets table only"
            )
        fields = {
            k: tuple(v) if isinstance(v, list) else v
            for k, v in entry.items()
            if k != "input_schema"
        }
        fields["input_schema"] = entry.get("input_schema")
        fields["toolsets"] = tuple(membership.get(str(entry.get("name")), ()))
        try:
            tool = BuiltinTool.model_validate(fields)
        except ValidationError as exc:
            raise CatalogError(f"{_DATA_FILE}: {label}: {exc}") from None
        for spelling in tool.names:
            if spelling in index:
                raise CatalogError(
                    f"{_DATA_FILE}: {spelling!r} names both {index[spelling].name!r} "
                    f"and {tool.name!r}"
                )
            index[spelling] = tool
        by_name[tool.name] = tool

    for set_name, members in toolsets_raw.items():
        for member in members:
            if member not in by_name:
                raise CatalogError(
                    f"{_DATA_FILE}: toolset {set_name!r} lists unknown tool {member!r}"
                )
    for tool_name in BLUEPRINT_LOOSENABLE:
        if tool_name not in by_name:
            raise CatalogError(f"{_DATA_FILE}: {tool_name!r} (blueprint-loosenable) is missing")

    return _Catalog(
        by_name=MappingProxyType(by_name),
        index=MappingProxyType(index),
        toolsets=MappingProxyType({k: tuple(v) for k, v in toolsets_raw.items()}),
        hints=MappingProxyType(dict(hints_raw)),
        digest=digest,
        blocking=tuple(t.name for t in by_name.values() if t.blocks_on_person),
    )


@functools.cache
def _catalog() -> _Catalog:
    return _build(_read_data())


def builtin_tools() -> Mapping[str, BuiltinTool]:
    """Every built-in tool by canonical name, in catalog order (read-only)."""
    return _catalog().by_name


def resolve_builtin(name: str) -> BuiltinTool | None:
    """The tool a name or alias refers to (exact, case-sensitive), or None."""
    return _catalog().index.get(name)


def default_permission(name: str) -> Permission:
    """Seed 004's built-in default for a tool name or alias. A name the
    catalog does not know (an MCP or authored tool) gets ``ask``."""
    tool = resolve_builtin(name)
    return _UNKNOWN_DEFAULT if tool is None else tool.default_permission


def impl_siblings(name: str) -> tuple[str, ...]:
    """Canonical names of the other built-ins sharing this tool's ``impl``
    (``terminal`` for ``shell``), in catalog order; empty for unknown names."""
    tool = resolve_builtin(name)
    if tool is None:
        return ()
    return tuple(
        t.name for t in _catalog().by_name.values() if t.impl == tool.impl and t is not tool
    )


def shell_hint(platform: str) -> str | None:
    """The system-prompt block for a stage that offers a shell tool on this
    platform, or None where the platform needs none (only Windows has one)."""
    return _catalog().hints.get(platform)


def catalog_digest() -> str:
    """sha256 of the catalog data in canonical JSON: a plan can record which
    catalog it was compiled against and the runtime can compare."""
    return _catalog().digest


if TYPE_CHECKING:
    TOOLSETS: Mapping[str, tuple[str, ...]]
    BLOCKING_TOOLS: tuple[str, ...]


def __getattr__(name: str) -> Any:
    # TOOLSETS and BLOCKING_TOOLS come from the data file; computing them on
    # first access keeps `import charter.compiler.catalog.builtin` free of file I/O.
    if name == "TOOLSETS":
        return _catalog().toolsets
    if name == "BLOCKING_TOOLS":
        return _catalog().blocking
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
