"""The authored-tool manifest: ``<tools root>/<tool_id>/tool.yaml``.

A tool.yaml declares one model-visible tool whose code lives next to it in
``module.py``. It accepts exactly nine keys; everything else is an error, so a
typo never silently falls back to a default. Keys that belong to a slot
(``timeout_seconds`` and friends) get their own rule, because the author
clearly meant something by them and needs to be told where they go.

As the host does, risk and approval words are read in any case and with
surrounding spaces (``HIGH`` is ``high``), and a key written as null takes
the host's default; both with a warning. A value in ``input_schema`` that
JSON cannot carry (PyYAML reads ``2024-01-01`` as a date) is an error: the
schema goes to the model as JSON.

The enums shared by all three YAML dialects (risk, approval policy, display
and model-output policy) are defined here and imported by
:mod:`charter.compiler.frontends.agent_yaml` and
:mod:`charter.compiler.frontends.mcp_manifest`.
"""

import datetime
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, field_validator

# A tool.yaml rates risk and approval in the built-in catalog's own words.
from charter.compiler.catalog.builtin import Approval as ApprovalPolicy
from charter.compiler.catalog.builtin import Risk
from charter.compiler.diagnostics import Diagnostic
from charter.compiler.frontends.base import Loaded, parse_mapping
from charter.compiler.frontends.normalize import Normalizer
from charter.compiler.frontends.validation import InputModel, invalid_value, thaw, validate_model
from charter.compiler.rules import diag, diag_at
from charter.compiler.sources.sourcemap import SourceMap

__all__ = [
    "SLOT_ONLY_FIELDS",
    "TOOL_FIELDS",
    "ApprovalPolicy",
    "Capability",
    "DisplayPolicy",
    "ModelOutputPolicy",
    "Risk",
    "ToolSpec",
    "capability_name",
    "load_tool_yaml",
    "tool_id_from_path",
]

# Display policy: how much of a call an operator's tool card shows. The host's
# own display switch has exactly three levels (quiet, summary, full) and the
# per-tool hint uses the same words, so those three are the accepted values.
DisplayPolicy = Literal["quiet", "summary", "full"]

# Model-output policy: what the model keeps of a result. The host's built-in
# catalog uses two values: ``content`` (the result's content goes into the
# conversation history, the default) and ``current_turn`` (listings such as
# tools_list and skill_view are shown for the turn that asked and not
# replayed later). Anything else is refused rather than guessed at.
ModelOutputPolicy = Literal["content", "current_turn"]

# Keys a slot manifest accepts but a tool manifest does not. Tools are
# dispatched by the host's registry, which has its own timeout and failure
# handling, so these would be silently ignored in tool.yaml.
SLOT_ONLY_FIELDS: tuple[str, ...] = (
    "failure_policy",
    "history_policy",
    "default_placement",
    "timeout_seconds",
)

_ENTRYPOINT = re.compile(
    r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$"
)
# A capability is a dotted family with an optional ``:`` scope, for example
# ``fs.read``, ``mcp.call:docs`` or ``tool.call:project_note``. Whitespace,
# empty parts or a bare wildcard would never match a grant the way the author
# expects, so they are refused here.
_CAPABILITY = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*(:[A-Za-z0-9_.*/-]+)*$")


def capability_name(value: str) -> str:
    """Validator for a capability name (used by all three dialects)."""
    if not _CAPABILITY.match(value):
        raise invalid_value(
            "'{value}' is not a capability name; write a dotted name with an optional "
            "':' scope, such as fs.read or mcp.call:docs",
            value=value,
        )
    return value


Capability = Annotated[str, AfterValidator(capability_name)]


class ToolSpec(InputModel):
    """A validated tool.yaml. Defaults match the host's, so a key left out
    means the same thing to Charter as to the agent host."""

    entrypoint: str = "module:execute"
    description: str = ""
    # Kept opaque here; the compiler checks it as a JSON Schema later.
    input_schema: dict[str, Any] = {}
    risk: Risk = "medium"
    # The registry gate: the core must grant it before the module is imported.
    capability: Capability | None = None
    approval_policy: ApprovalPolicy = "prompt"
    display_policy: DisplayPolicy = "summary"
    model_output_policy: ModelOutputPolicy = "content"
    # What the module's own code may require at run time; never satisfies
    # ``capability`` above.
    capabilities: tuple[Capability, ...] = ()

    def input_schema_json(self) -> dict[str, Any]:
        """``input_schema`` as plain JSON data. Loading turns every list into
        a tuple (models hold nothing mutable); a JSON Schema validator wants
        arrays back as lists."""
        thawed: dict[str, Any] = thaw(self.input_schema)
        return thawed

    @field_validator("entrypoint")
    @classmethod
    def _entrypoint_shape(cls, value: str) -> str:
        if not _ENTRYPOINT.match(value):
            raise invalid_value(
                "entrypoint '{value}' must be written module:function, such as module:execute",
                value=value,
            )
        return value


TOOL_FIELDS: tuple[str, ...] = tuple(ToolSpec.model_fields)


def tool_id_from_path(path: Path) -> str:
    """The tool's id: the name of the directory holding tool.yaml. ``path``
    may be the manifest itself or its directory."""
    if path.suffix in (".yaml", ".yml"):
        return path.parent.name
    return path.name


def load_tool_yaml(path: Path, display: str) -> Loaded[ToolSpec]:
    """Read and validate one tool.yaml. Never raises on file content."""
    parsed = parse_mapping(path, display, "yaml", what="tool.yaml", describe=_kind)
    if isinstance(parsed, Loaded):
        return parsed
    data, smap, diags = parsed
    diags.extend(_normalize(data, smap))
    diags.extend(_json_only(data.get("input_schema"), ("input_schema",), smap))
    slot_only = [k for k in data if k in SLOT_ONLY_FIELDS]
    diags.extend(_slot_only(slot_only, smap))
    # Validate without the slot-only keys: each was reported above under its
    # own rule and must not be reported a second time as unknown-key.
    rest = {k: v for k, v in data.items() if k not in SLOT_ONLY_FIELDS}
    model, more = validate_model(ToolSpec, rest, smap)
    diags.extend(more)
    return Loaded(display, model, smap, tuple(diags), data)


# The host's defaults for keys it reads with ``value or default``.
_NULL_DEFAULTS = {
    "entrypoint": "module:execute",
    "risk": "medium",
    "approval_policy": "prompt",
    "display_policy": "summary",
    "model_output_policy": "content",
}


def _normalize(data: dict[str, Any], smap: SourceMap) -> list[Diagnostic]:
    n = Normalizer(smap)
    for key, default in _NULL_DEFAULTS.items():
        n.default_if_null(data, key, (key,), default)
    n.word(data, "risk", ("risk",), ("low", "medium", "high", "critical"))
    n.word(data, "approval_policy", ("approval_policy",), ("auto", "prompt", "deny"))
    return n.diags


def _json_only(value: Any, path: tuple[str | int, ...], smap: SourceMap) -> list[Diagnostic]:
    """Dates and timestamps in the schema are errors (and are replaced by
    their text in place, so later checks still see a JSON document)."""
    out: list[Diagnostic] = []

    def walk(node: Any, where: tuple[str | int, ...]) -> None:
        if isinstance(node, dict):
            items: list[tuple[Any, Any]] = list(node.items())
        elif isinstance(node, list):
            items = list(enumerate(node))
        else:
            return
        for key, child in items:
            at = (*where, key)
            if isinstance(child, datetime.date):
                out.append(
                    diag_at(
                        "wrong-type",
                        f"PyYAML reads this as the date {child.isoformat()}, which a JSON Schema "
                        "cannot hold; quote it",
                        smap,
                        at,
                    )
                )
                node[key] = child.isoformat()
            else:
                walk(child, at)

    walk(value, path)
    return out


def _slot_only(keys: list[str], smap: SourceMap) -> list[Diagnostic]:
    return [
        diag(
            "slot-only-field-in-tool-yaml",
            f"'{key}' belongs to the slot configuration, not to tool.yaml; "
            "the host does not apply it to a tool",
            smap.key_span((key,)),
            key_path=key,
            help="remove it here; tool timeouts and failure handling are the host's, "
            "and slot settings go in the slot's own manifest",
        )
        for key in keys
    ]


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing"
    return f"a single value ({type(value).__name__})"
