"""Blueprints: ``agent.leviath`` (Leviath's name) or ``blueprint.toml``.

A blueprint is a TOML file with an ``[agent]`` table, a table per stage under
``[stages.<name>]``, and agent-wide tables such as ``[tool_permissions]``.
Every table Charter interprets is read strictly (unknown keys are errors
with a suggestion, enum values and permissions must be spelled exactly);
tables that only shape the conversation (``context``, ``compaction``, a
stage's ``model``, ...) are accepted and kept as opaque data.

Edges
-----
A stage's outgoing edges may be written in either of two shapes:

* Leviath's own: one table per target stage,
  ``[stages.review.transitions.summary]`` (an empty ``[stages.x.transitions]``
  marks a terminal stage);
* a list with an explicit target, ``[[stages.review.edges]]`` with
  ``to = "summary"``, which keeps edges in the order written and reads well
  in a stage file.

Both carry the same keys (``hint``, ``condition``, ``transform``,
``transform_config``, ``gate``, ``stuck_after_*``). A stage uses one shape or
the other, never both, so there is a single place to look for its edges.
:meth:`StageTable.all_edges` hands back every edge as an :class:`EdgeTable` together
with its key path, whichever shape it was written in.

Stages may also live in their own files (``stages/<name>.toml``); see
:mod:`charter.compiler.frontends.stage_toml`.
"""

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import AfterValidator, Discriminator, Field, Tag, model_validator
from pydantic_core import PydanticCustomError

from charter.compiler.diagnostics import Diagnostic, format_key_path
from charter.compiler.frontends.base import Loaded, load_document
from charter.compiler.frontends.config_toml import (
    McpServer,
    PermissionMap,
    SafeCommands,
    SandboxTable,
    ToolScriptPermissions,
    explain_misplaced_keys,
)
from charter.compiler.frontends.regions import Region
from charter.compiler.frontends.validation import InputModel, invalid_value
from charter.compiler.rules import diag, diag_at
from charter.compiler.sources.sourcemap import KeyPath, SourceMap

__all__ = [
    "Agent",
    "Blueprint",
    "BlueprintReadPaths",
    "BlueprintSecurity",
    "Compaction",
    "Condition",
    "ContextConfig",
    "ContextTransform",
    "EdgeTable",
    "FileTracking",
    "GateTable",
    "Hooks",
    "InteractionPointTable",
    "Mode",
    "ModelConfig",
    "ModelEntry",
    "Nudge",
    "OutputTable",
    "Region",
    "RegionMapping",
    "RepetitionDetection",
    "Sandbox",
    "StageContext",
    "StageTable",
    "ToolRouting",
    "Transform",
    "TransformConfig",
    "Transition",
    "TransitionValue",
    "check_stage",
    "explain_misplaced",
    "load_blueprint",
]

Mode = Literal[
    "autonomous", "interactive", "interactive_points", "fan_out", "fan_out_merge", "output"
]
Condition = Literal["always", "llm_choice", "error", "max_iterations", "stuck", "dead_end"]
Transform = Literal["direct", "clear", "compact", "summarize", "custom"]

PositiveInt = Annotated[int, Field(ge=1)]
NonNegativeInt = Annotated[int, Field(ge=0)]


class OutputTable(InputModel):
    """The shape of a run's final answer. ``format`` is a free label (json,
    yaml, ... get a parse check at run time); ``schema`` is a JSON Schema
    written as a TOML table; ``validator`` is a script path."""

    format: str | None = None
    instructions: str | None = None
    example: str | None = None
    # ``schema`` would shadow a BaseModel attribute, hence the alias.
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    validator: str | None = None


class GateTable(InputModel):
    """What a stage must have done before an edge may be taken."""

    require_modifications: bool = False
    require_regions: tuple[str, ...] = ()
    require_region_updated: str | None = None
    require_no_open_items: str | None = None
    # An alternative way to pass require_modifications: this region is non-empty.
    region: str | None = None
    # Extra tools whose successful calls count as modifying work.
    tools: tuple[str, ...] = ()
    message: str | None = None
    # Unset means the runtime's default of 3; then the edge is forced.
    max_attempts: PositiveInt | None = None


class TransformConfig(InputModel):
    carry: tuple[str, ...] = ()
    compact: tuple[str, ...] = ()
    clear: tuple[str, ...] = ()
    compact_prompt: str | None = None


_STUCK_KEYS = (
    "stuck_after_iterations",
    "stuck_after_minutes",
    "stuck_after_same_file_edits",
    "stuck_after_tool_calls",
)


class Transition(InputModel):
    """An edge whose target is the key it is written under
    (``[stages.<from>.transitions.<to>]``)."""

    hint: str | None = None
    condition: Condition | None = None
    transform: Transform | None = None
    transform_config: TransformConfig | None = None
    gate: GateTable | None = None
    stuck_after_iterations: PositiveInt | None = None
    stuck_after_minutes: PositiveInt | None = None
    stuck_after_same_file_edits: PositiveInt | None = None
    stuck_after_tool_calls: PositiveInt | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        # Both mistakes build an edge that silently never behaves as written:
        # a stuck edge with no threshold never fires, and thresholds on any
        # other edge are never read.
        armed = [k for k in _STUCK_KEYS if getattr(self, k) is not None]
        if self.condition == "stuck" and not armed:
            raise PydanticCustomError(
                "missing-key",
                "a 'stuck' edge needs at least one of " + ", ".join(_STUCK_KEYS),
            )
        if armed and self.condition != "stuck":
            raise invalid_value(
                '{keys} only apply to an edge with condition = "stuck"', keys=", ".join(armed)
            )
        return self

    @property
    def effective_condition(self) -> Condition:
        """What the runtime does with an edge that names no condition: a hint
        alone means the model chooses; a bare edge is always taken."""
        if self.condition is not None:
            return self.condition
        return "llm_choice" if self.hint is not None else "always"


class EdgeTable(Transition):
    """An edge written as an item of ``[[stages.<from>.edges]]``."""

    to: Annotated[str, Field(min_length=1)]


def _transition_kind(value: Any) -> str:
    # A table is an edge with keys; Leviath also takes a plain value
    # (``done = "true"``) as an edge with none, which is an always edge
    # whatever the value says. "str" and "bool" are tags the mapper drops.
    if isinstance(value, dict | Transition):
        return "dict"
    return "bool" if isinstance(value, bool) else "str"


TransitionValue = Annotated[
    Annotated[Transition, Tag("dict")] | Annotated[str, Tag("str")] | Annotated[bool, Tag("bool")],
    Discriminator(_transition_kind),
]


class InteractionPointTable(InputModel):
    name: str | None = None
    prompt: str | None = None
    required: bool = True
    # What an unattended run does here; absent means auto_approve.
    unattended: Literal["ask", "auto_approve"] | None = None
    style: Literal["free_text", "multiple_choice", "confirm"] | None = None
    options: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()  # Leviath's alias for options
    directives: dict[str, str] = {}
    followups: dict[str, str] = {}  # Leviath's alias for directives
    abort_options: tuple[str, ...] = ()
    edit_options: tuple[str, ...] = ()
    document_region: str | None = None


class ToolRoutingOverride(InputModel):
    region: str | None = None
    max_result_tokens: NonNegativeInt | None = None

    @model_validator(mode="after")
    def _says_something(self) -> Self:
        # Leviath refuses an empty override: it reads as a limit and is none.
        if self.region is None and self.max_result_tokens is None:
            raise invalid_value("an override needs region, max_result_tokens or both")
        return self


def _override_kind(value: Any) -> str:
    # One branch per shape, so a bad override gets one error, not one per
    # union member; "str" and "dict" are tags the diagnostic mapper drops.
    return "dict" if isinstance(value, dict | ToolRoutingOverride) else "str"


RoutingOverride = Annotated[
    Annotated[str, Tag("str")] | Annotated[ToolRoutingOverride, Tag("dict")],
    Discriminator(_override_kind),
]


class ToolRouting(InputModel):
    """Where tool results land in the context window."""

    default_region: str | None = None
    persist: bool | None = None
    max_result_tokens: PositiveInt | None = None
    overrides: dict[str, RoutingOverride] = {}
    max_result_tokens_per_tool: dict[str, NonNegativeInt] = {}


# Where a stage's commands run: the same table as the user's [sandbox]
# (charter.compiler.frontends.config_toml.SandboxTable); a blueprint's may
# only tighten the user's.
Sandbox = SandboxTable


class BlueprintSecurity(InputModel):
    # A blueprint can only switch taint tracking on; the compiler enforces that.
    taint_tracking: bool | None = None


class Nudge(InputModel):
    enabled: bool | None = None
    max: NonNegativeInt | None = None
    text: str | None = None


class Hooks(InputModel):
    on_stage_enter: str | None = None
    on_stage_exit: str | None = None
    before_inference: str | None = None
    after_inference: str | None = None
    on_tool_call: str | None = None
    on_completion: str | None = None
    on_error: str | None = None


class ModelEntry(InputModel):
    provider: str
    model: str


class ModelConfig(InputModel):
    """Which model runs a stage. Charter does not interpret it, but reads its
    keys strictly: in TOML every key written after a ``[stages.x.model]``
    header lands in this table, and a stage key lost there (a
    ``tool_permissions`` with a deny, say) would otherwise vanish."""

    models: tuple[ModelEntry, ...] = ()
    provider: str | None = None
    model: str | None = None
    fallbacks: tuple[ModelEntry, ...] = ()
    allow_user_default: bool | None = None
    request_timeout_secs: PositiveInt | None = None
    # Passed to the provider as written; its keys are the provider's.
    parameters: dict[str, Any] = {}


class FileTracking(InputModel):
    region: str | None = None
    track_reads: bool | None = None
    track_writes: bool | None = None
    max_file_tokens: NonNegativeInt | None = None


class ContextConfig(InputModel):
    """``[context]``: the region layout and file tracking. A stage's own
    ``context`` may only hold ``regions``; the compiler reports a stage that
    writes ``file_tracking``."""

    regions: dict[str, Region] = {}
    file_tracking: FileTracking | None = None


class StageContext(InputModel):
    """A stage's own ``context``: the regions it sees (the ones it leaves out
    are hidden for the stage, not destroyed)."""

    regions: dict[str, Region] = {}


class Compaction(InputModel):
    """``[compaction]``: the model that summarizes compacting regions."""

    provider: str | None = None
    model: str | None = None
    system_prompt: str | None = None
    max_summary_tokens: PositiveInt | None = None
    # A float is kept as its text would be: plans never hold this value.
    temperature: float | None = None


class RepetitionDetection(InputModel):
    enabled: bool | None = None
    max_repeat_calls: PositiveInt | None = None
    max_readonly_streak: PositiveInt | None = None


class RegionMapping(InputModel):
    from_region: str | None = None
    to_region: str | None = None
    transform: Literal["direct", "summarize", "extract"] | None = None
    fields: tuple[str, ...] = ()


class ContextTransform(InputModel):
    """One ``[[transforms]]`` entry: how a parent's regions map onto a
    child's when one blueprint hands off to another."""

    from_blueprint: str | None = None
    to_blueprint: str | None = None
    mappings: tuple[RegionMapping, ...] = ()


class StageTable(InputModel):
    # Unset means autonomous at run time; kept None so lints can tell.
    mode: Mode | None = None
    description: str | None = None
    system_prompt: str | None = None
    transition_prompt: str | None = None

    # Tool visibility and policy. Names are kept as written; resolving
    # aliases (bash = shell) and MCP names is the compiler's job.
    available_tools: tuple[str, ...] = ()
    available_connectors: tuple[str, ...] = ()
    required_tools: tuple[str, ...] = ()
    allow_blocking_tools: bool = False
    tool_permissions: PermissionMap = {}
    shell_hint: bool | None = None
    batch_tool_hint: bool | None = None

    # Loop control and output.
    max_iterations: PositiveInt | None = None
    max_revisits: NonNegativeInt | None = None
    require_output: bool = False
    output: OutputTable | None = None
    # Unset means: true for mode = "output", false otherwise.
    allow_complete: bool | None = None
    interaction_points: tuple[InteractionPointTable, ...] = ()
    requires_children: bool = False
    allow_as_worker: bool = False
    accepts_messages: bool = True

    # Execution environment.
    tool_routing: ToolRouting | None = None
    sandbox: Sandbox | None = None
    security: BlueprintSecurity | None = None
    nudge: Nudge | None = None
    hooks: Hooks | None = None

    # Which model runs the stage, and the regions it sees (its own layout
    # replaces the blueprint's; Charter reads both for the linter only).
    model: ModelConfig | None = None
    context: StageContext | None = None

    # Fan-out settings.
    worker_agent: str | None = None
    worker_stage: str | None = None
    worker_query: str | None = None
    merge_stage: str | None = None
    split_prompt: str | None = None
    results_region: str | None = None
    # 0 means unlimited (max_workers) or no cap (max_items).
    max_workers: NonNegativeInt | None = None
    max_items: NonNegativeInt | None = None
    on_worker_failure: Literal["continue", "fail_all"] | None = None
    # How often a fan_out stage that ended without calling fan_out is asked
    # again (unset: 3; 0 lets it through at once).
    max_attempts: NonNegativeInt | None = None

    # Outgoing edges, in either shape (see the module docs).
    transitions: dict[str, TransitionValue] = {}
    edges: tuple[EdgeTable, ...] = ()

    def all_edges(self) -> tuple[tuple[KeyPath, EdgeTable], ...]:
        """Every outgoing edge with its key path relative to the stage's
        table: ``("transitions", target)`` or ``("edges", index)``."""
        out: list[tuple[KeyPath, EdgeTable]] = []
        for target, t in self.transitions.items():
            keys = (
                t.model_dump(exclude_unset=True, by_alias=True) if isinstance(t, Transition) else {}
            )
            edge = EdgeTable.model_validate({**keys, "to": target})
            out.append((("transitions", target), edge))
        for i, e in enumerate(self.edges):
            out.append((("edges", i), e))
        return tuple(out)

    @property
    def declares_edges(self) -> bool:
        """True when the stage wrote an edge table at all, even an empty
        ``[stages.x.transitions]`` that marks it terminal."""
        return bool(self.transitions or self.edges) or "transitions" in self.model_fields_set


class Agent(InputModel):
    # Leviath names an agent without one "unnamed"; the name keys the user's
    # [agent_tool_permissions.<name>] and friends.
    name: Annotated[str, Field(min_length=1)] = "unnamed"
    version: str | None = None
    description: str | None = None
    # Unset means the first stage declared.
    entry_stage: str | None = None
    # Unset means the runtime's default depth of 3.
    max_child_depth: NonNegativeInt | None = None
    dynamic_tools: bool = False
    shell_hint: bool | None = None
    batch_tool_hint: bool | None = None
    nudge: Nudge | None = None
    output: OutputTable | None = None


def _read_path(value: str) -> str:
    from charter.compiler.frontends.read_paths import entry_problem

    problem = entry_problem(value)
    if problem is not None:
        raise invalid_value("read_paths entry '{value}': {problem}", value=value, problem=problem)
    return value


class BlueprintReadPaths(InputModel):
    """``[read_paths]``: paths outside the working directory the agent asks
    to read. Leviath refuses a malformed entry when it loads the blueprint,
    so Charter does too; a well-formed one is still only a request."""

    allow: tuple[Annotated[str, AfterValidator(_read_path)], ...] = ()


class Blueprint(InputModel):
    agent: Agent
    stages: dict[str, StageTable] = {}
    tool_permissions: PermissionMap = {}
    # Declared, not granted: inert until the user's config opts in.
    safe_commands: SafeCommands | None = None
    read_paths: BlueprintReadPaths | None = None
    security: BlueprintSecurity | None = None
    tool_script_permissions: ToolScriptPermissions | None = None
    sandbox: Sandbox | None = None
    # Leviath's daemon reads a blueprint's own servers; each one is a host
    # command, so Charter reads them strictly and lets the compiler decide.
    mcp_servers: tuple[McpServer, ...] = ()
    # Not interpreted by Charter (context keys are still checked).
    context: ContextConfig | None = None
    compaction: Compaction | None = None
    repetition_detection: RepetitionDetection | None = None
    transforms: tuple[ContextTransform, ...] = ()

    @property
    def entry(self) -> str | None:
        """The stage a run starts in: ``entry_stage``, else the first stage
        declared in this file."""
        if self.agent.entry_stage is not None:
            return self.agent.entry_stage
        return next(iter(self.stages), None)


_NAME_LISTS = ("available_tools", "available_connectors", "required_tools")


def check_stage(stage: StageTable, smap: SourceMap, prefix: KeyPath) -> list[Diagnostic]:
    """Checks on one validated stage that need positions: a name listed twice
    in a tool list, and both edge shapes used at once. ``prefix`` is where
    the stage's table sits in ``smap``'s file."""
    out: list[Diagnostic] = []
    for field_name in _NAME_LISTS:
        names: Sequence[str] = getattr(stage, field_name)
        first: dict[str, int] = {}
        for i, name in enumerate(names):
            if name not in first:
                first[name] = i
                continue
            earlier = smap.value_span((*prefix, field_name, first[name]))
            out.append(
                diag_at(
                    "duplicate-definition",
                    f"'{name}' is listed twice in {field_name} (first at line {earlier.line}, "
                    f"column {earlier.col})",
                    smap,
                    (*prefix, field_name, i),
                    help="remove the second entry",
                )
            )
    for target, value in stage.transitions.items():
        # Leviath takes a plain value as an always edge, whatever it says;
        # anything but true reads as if it meant something else.
        if isinstance(value, Transition) or value is True or value in ("true", "always"):
            continue
        path = (*prefix, "transitions", target)
        out.append(
            diag_at(
                "edge-written-as-value",
                f"the edge to '{target}' is written as {value!r}; a plain value is an edge that is "
                "always taken, whatever the value says",
                smap,
                path,
                help=f"write a table ([stages.<name>.transitions.{target}] with a condition), or "
                "remove the line if no edge was meant",
            )
        )
    if stage.edges and "transitions" in stage.model_fields_set:
        first_edge = smap.key_span((*prefix, "edges"))
        out.append(
            diag(
                "invalid-value",
                "this stage writes edges both as [stages.<name>.transitions.<target>] tables "
                "and as [[stages.<name>.edges]] items; use one shape",
                first_edge,
                key_path=format_key_path((*prefix, "edges")),
                help="move every edge under 'transitions' (keyed by target) or under 'edges' "
                "(with 'to')",
            )
        )
    return out


def _postcheck(bp: Blueprint, smap: SourceMap) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for name, stage in bp.stages.items():
        out.extend(check_stage(stage, smap, ("stages", name)))
    return out


def explain_misplaced(diags: Sequence[Diagnostic], *, stage_file: bool = False) -> list[Diagnostic]:
    """Hint where a misplaced key belongs: a stage key caught in one of the
    stage's sub-tables by TOML's header rules, or (in a blueprint) a stage or
    agent key written at the top level."""
    home = "the stage's own keys, above its first [sub-table] header"
    out = explain_misplaced_keys(
        diags, keys=StageTable.model_fields, depth=0 if stage_file else 2, what="stage", home=home
    )
    if stage_file:
        return out
    for i, d in enumerate(out):
        m = _UNKNOWN.match(d.message) if d.name == "unknown-key" else None
        if m is None or d.key_path != m.group(1) or "did you mean" in d.message:
            continue
        if m.group(1) in StageTable.model_fields:
            out[i] = d._replace(
                help=f"'{m.group(1)}' is a stage key; put it under a [stages.<name>] table"
            )
        elif m.group(1) in Agent.model_fields:
            out[i] = d._replace(help=f"'{m.group(1)}' belongs in the [agent] table")
    return out


_UNKNOWN = re.compile(r"unknown key '([^']*)'")


def load_blueprint(path: Path, display: str) -> Loaded[Blueprint]:
    """Load ``agent.leviath`` or ``blueprint.toml``. Never raises on bad
    input; every problem is a diagnostic with a position."""
    loaded = load_document(path, display, Blueprint, "toml", postcheck=_postcheck)
    return loaded._replace(diagnostics=tuple(explain_misplaced(loaded.diagnostics)))
