"""The plan model: the one contract between Charter's compiler and runtime.

The compiler resolves every name, permission, capability and schema once and
writes the answers here; the runtime executes what the plan says and never
looks anything up again. The model is deeply immutable (frozen models holding
tuples and strings only), holds no floats, no timestamps and no absolute
paths, and serialises to canonical JSON whose sha256 is the plan's identity.

Every decision carries its provenance: the scopes consulted in order, the value
each gave and where it was written, and each clamp that changed the outcome.
"""

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from charter.runtime.plan.shell import ShellPolicy
from charter.runtime.plan.vocabulary import Permission

__all__ = [
    "SCHEMA_VERSION",
    "AgentPlan",
    "ArgumentGuard",
    "AuthoredTool",
    "Clamp",
    "ContextRegion",
    "Decision",
    "Edge",
    "EdgeTransform",
    "FanOut",
    "Gate",
    "Grant",
    "InteractionPoint",
    "Limits",
    "McpServerPlan",
    "McpToolPin",
    "OutputSpec",
    "NudgePolicy",
    "RepetitionPolicy",
    "RegionSeed",
    "RequiredRegion",
    "ResultRouting",
    "RouteRule",
    "PathArg",
    "Plan",
    "PlanBody",
    "SandboxLimits",
    "SandboxMount",
    "SandboxProfile",
    "SandboxSetting",
    "ScopeValue",
    "ScriptPermission",
    "ScriptPermissions",
    "ScriptTool",
    "SourceDigest",
    "SourceRef",
    "ScriptSource",
    "SeedCall",
    "Stage",
    "StageHook",
    "StageModel",
    "SummaryPolicy",
    "StageTool",
    "TaintPolicy",
    "ToolEntry",
    "canonical_json",
    "digest_of",
    "dumps_canonical",
]

# 2: stages and agents carry a sandbox profile.
# 3: the plan is self-contained: tools carry their aliases, path arguments,
#    argument guard and schema trust; stages the permission a shell write
#    answers to when write_file is not offered.
SCHEMA_VERSION = 3


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=False)


class SourceRef(_Frozen):
    """A position in a project file; ``path`` is relative to the project root."""

    path: str
    line: int = 1
    col: int = 1

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}"


class ScopeValue(_Frozen):
    """What one scope said about a tool, in the order scopes were consulted."""

    scope: str  # launch | stage | agent | agent_config | config | core | builtin_default | ...
    value: Permission | None  # None: the scope said nothing
    source: SourceRef | None = None
    detail: str = ""


class Clamp(_Frozen):
    """A rule that changed the decision, with the value before and after."""

    rule: str  # stable key, e.g. "blueprint-tighten-only"
    before: Permission
    after: Permission
    reason: str
    source: SourceRef | None = None


class Decision(_Frozen):
    permission: Permission
    # Whether the launch flags (--allow TOOL, --yolo) may lift this to allow.
    # Only an ask is ever liftable; a deny never is.
    liftable: bool
    scopes: tuple[ScopeValue, ...] = ()
    clamps: tuple[Clamp, ...] = ()

    def explain(self) -> str:
        said = [f"{s.scope}={s.value}" for s in self.scopes if s.value is not None]
        text = ", ".join(said) if said else "no scope set it"
        for c in self.clamps:
            text += f"; {c.rule}: {c.before} -> {c.after} ({c.reason})"
        return text


class AuthoredTool(_Frozen):
    tool_id: str
    directory: str  # relative to the project root
    module: str  # relative path of the module file
    entrypoint: str  # "module:function"
    module_sha256: str
    capabilities: tuple[str, ...] = ()  # effect grants for ctx.capability.require()
    is_async: bool = False


class McpToolPin(_Frozen):
    server: str
    tool: str  # the server's own name for the tool
    description_sha256: str | None = None
    schema_sha256: str | None = None


class ScriptTool(_Frozen):
    """A Leviath script tool (``tools/<file>.rhai``): ``path`` and ``sha256``
    say which file the decision was made about, and ``source`` is its text,
    which Charter's Rhai interpreter runs (the runtime reads no script file,
    so the script that runs is the one that was compiled and reviewed)."""

    path: str  # relative to the project root, or "<user-tools>/<file>" for the user's folder
    sha256: str
    source: str | None = None  # None: compiled by a Charter that did not carry scripts
    scope: Literal["agent", "user"] = "agent"
    # The <name>.toml beside the script that replaced its directives, if any.
    override: str | None = None


class PathArg(_Frozen):
    """One argument of a tool that names a workspace path: confined to the
    workspace before any approval, and how the tool uses it."""

    arg: str  # the argument's name
    op: Literal["read", "write"]
    many: bool = False  # the argument is a list of paths
    # The path a call that omits the argument touches ("." for a listing of
    # the workspace root); None: an omitted argument touches nothing.
    default: str | None = None


ArgumentGuard = Literal["shell", "url", "delegate"]


class ToolEntry(_Frozen):
    """One model-visible tool of an agent."""

    name: str
    source: Literal["builtin", "authored", "mcp", "script"]
    impl: str  # the runtime implementation key (builtin impl, authored id, or server)
    description: str
    # Canonical JSON text of the argument schema; None means validation is off
    # for this tool, and ``validation_note`` says why.
    input_schema: str | None
    # Cross-field rules checked with the schema but not shown to the model
    # (several providers reject combinators in tool parameters).
    input_rules: str | None = None
    validation_note: str = ""
    capability: str | None = None
    risk: Literal["low", "medium", "high", "critical"] = "medium"
    blocks_on_person: bool = False
    counts_as_work: bool = False
    outbound: bool = False
    host_only: bool = False
    origin: SourceRef | None = None
    authored: AuthoredTool | None = None
    mcp: McpToolPin | None = None
    script: ScriptTool | None = None
    # What the runtime needs to decide a call, pinned when compiling so a
    # newer catalog never changes the decisions of a plan already written.
    # Other names the model may call the tool by (``bash`` for ``shell``).
    aliases: tuple[str, ...] = ()
    # The arguments that name workspace paths.
    path_args: tuple[PathArg, ...] = ()
    # The check that reads the arguments beyond the schema: ``shell`` (the
    # command guard over ``command`` in ``cwd``, the environment overlay,
    # secret bindings), ``url`` (the URL policy over ``url``), ``delegate``
    # (the child core needs ``agents.spawn:<core_id>``, and the child's
    # controls may only narrow).
    guard: ArgumentGuard | None = None
    # The schema is the built-in catalog's own, checked against its
    # meta-schema by the catalog's tests, so the runtime does not check it again.
    schema_trusted: bool = False
    # The description's template, for a built-in whose description shows the
    # stage's answer shape (submit_output): a parent that overrides the shape
    # renders it again from here, not from the catalog of a newer Charter.
    description_template: str | None = None


class Gate(_Frozen):
    require_modifications: bool = False
    require_regions: tuple[str, ...] = ()
    require_region_updated: tuple[str, ...] = ()
    require_no_open_items: tuple[str, ...] = ()
    region: str | None = None
    tools: tuple[str, ...] = ()
    message: str | None = None
    max_attempts: int = 3


class EdgeTransform(_Frozen):
    """A ``custom`` edge's ``transform_config``: the regions (``conversation``
    among them) it carries over as they are, summarizes, or clears."""

    carry: tuple[str, ...] = ()
    compact: tuple[str, ...] = ()
    clear: tuple[str, ...] = ()
    compact_prompt: str | None = None


class SummaryPolicy(_Frozen):
    """``[compaction]``: who summarizes on a compact edge, and how."""

    provider: str | None = None
    model: str | None = None
    system_prompt: str | None = None
    max_summary_tokens: int = 2000


class Edge(_Frozen):
    to: str
    condition: str = "llm_choice"
    hint: str | None = None
    transform: str | None = None
    transform_config: EdgeTransform | None = None
    gate: Gate | None = None
    # Thresholds of a ``stuck`` edge (any one reached fires it).
    stuck_after_iterations: int | None = None
    stuck_after_minutes: int | None = None
    stuck_after_same_file_edits: int | None = None
    stuck_after_tool_calls: int | None = None
    # Not written in the blueprint: Leviath moves a stage without transitions
    # on to the next stage declared, and the compiler makes that an edge.
    implied: bool = False
    origin: SourceRef | None = None


class FanOut(_Frozen):
    """A ``mode = "fan_out"`` stage's workers: exactly one source of them
    (a stage of this blueprint, an installed agent, or a query), where their
    report goes and which stage takes over afterwards."""

    worker_stage: str | None = None
    worker_agent: str | None = None
    worker_query: str | None = None
    merge_stage: str | None = None
    results_region: str | None = None
    max_workers: int | None = None  # unset: the runtime's default; 0: unlimited
    max_items: int | None = None
    max_attempts: int | None = None
    on_worker_failure: Literal["continue", "fail_all"] = "continue"


class ScriptSource(_Frozen):
    """A Rhai script a stage runs (an output validator): its text, carried
    so the runtime reads no file, and the file it came from."""

    path: str  # relative to the project root
    sha256: str
    source: str


class OutputSpec(_Frozen):
    format: str | None = None
    instructions: str | None = None
    example: str | None = None
    answer_schema: str | None = None  # canonical JSON text of the answer's JSON Schema
    # The stage's own validator script (fn validate(content)), run on every answer.
    validator: ScriptSource | None = None


class SandboxLimits(_Frozen):
    """Resource bounds for one contained command and everything it starts;
    None leaves that bound as the host has it."""

    processes: int | None = 512  # RLIMIT_NPROC inside the sandbox's own user namespace
    memory_mb: int | None = 8192  # address space (RLIMIT_AS): generous, runtimes reserve a lot
    cpu_seconds: int | None = 600  # RLIMIT_CPU
    open_files: int | None = 1024  # RLIMIT_NOFILE
    file_size_mb: int | None = 4096  # RLIMIT_FSIZE: the largest file one write may grow


class SandboxMount(_Frozen):
    """An extra host path made visible inside the sandbox, as written in the
    user's config (absolute or ``~/...``); read-only unless ``writable``."""

    path: str
    writable: bool = False


class SandboxSetting(_Frozen):
    """Where one setting of a resolved profile came from."""

    key: str  # kind, network, mounts, ...
    scope: str  # default | config | blueprint | stage
    value: str  # the value that scope asked for, as text
    source: SourceRef | None = None
    note: str = ""  # set when the value was clamped or ignored, and why


class SandboxProfile(_Frozen):
    """Where the commands of one agent (or one stage) run: the resolved
    sandbox, the stronger of the user's config, the agent and the stage.

    Paths are symbolic so the plan stays machine-independent: ``hidden``
    entries are absolute or start with ``~`` (the user's home);
    ``read_only`` entries are relative to the workspace. The workspace and
    a private temporary directory are the writable roots (the workspace
    only when ``workspace`` is ``write``), plus ``mounts`` marked writable.
    """

    kind: Literal["none", "namespace", "container"] = "namespace"
    workspace: Literal["write", "read"] = "write"
    network: Literal["none", "proxy"] = "none"
    # Hosts the proxy lets through (network = proxy): exact names, "*.suffix"
    # or "*" for any public host; the URL policy's SSRF rules apply to all.
    allow_hosts: tuple[str, ...] = ()
    read_only: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    mounts: tuple[SandboxMount, ...] = ()
    limits: SandboxLimits = Field(default_factory=SandboxLimits)
    on_unavailable: Literal["error", "warn"] = "error"
    image: str | None = None  # kind = container
    engine: str | None = None  # kind = container; only the user's config may name it
    persist: bool = False
    # Shell-guard rule keys whose ask this sandbox answers: a command whose
    # only reasons to ask are these runs unprompted, but only in a run where
    # this sandbox is in force (charter run), never in charter check or a hook.
    contained_allow: tuple[str, ...] = ()
    # Whether the user's own config chose the kind, and the fallback: only
    # the user may run commands uncontained.
    user_kind: bool = False
    user_on_unavailable: bool = False
    settings: tuple[SandboxSetting, ...] = ()


class StageTool(_Frozen):
    name: str
    decision: Decision


HookName = Literal[
    "on_stage_enter",
    "on_stage_exit",
    "before_inference",
    "after_inference",
    "on_tool_call",
    "on_completion",
    "on_error",
]


class StageHook(_Frozen):
    """A stage's Rhai hook: the script's text (run by Charter's interpreter,
    so the runtime reads no file) and which file it came from."""

    hook: HookName
    path: str  # relative to the project root
    sha256: str
    source: str


class NudgePolicy(_Frozen):
    """Leviath's nudge, as the stage, agent and user config set it: a stage
    about to end on text with no tool call made in it is told ``text``
    instead (``{stage}``, ``{regions}`` filled in), at most ``max`` times."""

    enabled: bool = True
    max: int = 3
    text: str = (
        "You have tools available. Please use them to complete the task. Start by reading "
        "the relevant files in the working directory."
    )


class RequiredRegion(_Frozen):
    """A context region the stage's agent must write before the stage may
    end (``required = true``, not filled from the caller's input)."""

    name: str
    message: str | None = None  # may name the region as {region}


class StageModel(_Frozen):
    """One entry of a stage's model list: a provider and the model name sent
    to it, in the order Leviath tries them."""

    provider: str
    model: str


class SeedCall(_Frozen):
    """One tool a ``tools`` seed calls at spawn, with its arguments (JSON)."""

    name: str
    args_json: str = "{}"


class RegionSeed(_Frozen):
    """What a region starts with. ``caller``: the caller's input named
    ``key`` (``task`` is the run's task); ``parent``: a value a parent agent
    passed under ``key``; ``files``/``glob``: workspace files, read confined;
    ``literal``: ``text``; ``command``: ``text`` run through the shell guard
    and the stage's sandbox (an ask is a refusal: nobody is there to answer);
    ``tools``: ``calls`` through every gate. ``each_stage``: run again on
    every stage entry."""

    source: Literal["caller", "parent", "files", "glob", "literal", "command", "tools"]
    key: str | None = None
    paths: tuple[str, ...] = ()
    text: str | None = None
    calls: tuple[SeedCall, ...] = ()
    each_stage: bool = False


class ContextRegion(_Frozen):
    """One region of a stage's context layout, as Leviath lays it out: what
    it holds, how large it may grow (``max_tokens``, resolved from a
    percentage of the stage model's window where the file gave one), and
    what a write that does not fit does."""

    name: str
    kind: Literal[
        "temporary",
        "pinned",
        "sliding_window",
        "compacting",
        "compact_history",
        "clearable",
        "hashmap",
        "checklist",
    ]
    max_tokens: int
    volatility: Literal["stable", "grows", "rewritten"] = "rewritten"
    admission: Literal["evict", "reject"] = "evict"
    description: str | None = None  # shown to the model only with describe_in_prompt
    describe_in_prompt: bool = False
    max_items: int | None = None  # sliding_window
    strategy: Literal["per_item", "bulk", "compact"] = "per_item"
    overflow: int = 0  # sliding_window, strategy = "bulk"
    compact_count: int = 0  # sliding_window, strategy = "compact"
    # compacting: past this many tokens the model summarizes the region in place
    # (compact_at of the budget, threshold_tokens, whichever is lower)
    compact_at_tokens: int | None = None
    source_region: str | None = None  # compact_history: whose summaries it keeps
    max_entries: int | None = None  # hashmap
    required: bool = False
    summarizable: bool = True  # a compact edge may rewrite it
    required_message: str | None = None  # may name the region as {region}
    seed: RegionSeed | None = None
    origin: SourceRef | None = None


class RouteRule(_Frozen):
    """Where one tool's results go (``region``), and how much of one is kept."""

    tool: str
    region: str | None = None
    max_result_tokens: int | None = None


class ResultRouting(_Frozen):
    """A stage's ``tool_routing``: results go to a region, and a pointer to
    it stays in the conversation; a result past its token cap is cut."""

    default_region: str | None = None
    max_result_tokens: int | None = None
    rules: tuple[RouteRule, ...] = ()  # sorted by tool


class RepetitionPolicy(_Frozen):
    """``[repetition_detection]``: when the model is nudged out of a loop."""

    enabled: bool = True
    max_repeat_calls: int = 3
    max_readonly_streak: int = 10


class InteractionPoint(_Frozen):
    """A checkpoint of a ``mode = "interactive_points"`` stage: before the
    stage may move on, a person answers it. An answer in ``abort_options``
    ends the run; one in ``edit_options`` lets the person edit the stage's
    answer, which is shown again; one with a directive sends the directive to
    the model and the stage goes on; any other approves."""

    name: str
    prompt: str = ""
    required: bool = True
    # with nobody there (--yolo, no terminal): approve, or stop the run
    unattended: Literal["ask", "auto_approve"] = "auto_approve"
    style: Literal["free_text", "multiple_choice", "confirm"] = "free_text"
    options: tuple[str, ...] = ()
    directives: tuple[tuple[str, str], ...] = ()  # (option, directive), sorted
    abort_options: tuple[str, ...] = ()
    edit_options: tuple[str, ...] = ()
    # the context section the reviewed text is written to, replacing it
    document_region: str | None = None


class Stage(_Frozen):
    name: str
    mode: str
    # Tools offered to the model when a person is watching, and when nobody is
    # (--yolo, sub-agents, fan-out workers: blocking tools removed unless
    # required).
    attended: tuple[str, ...]
    unattended: tuple[str, ...]
    required_tools: tuple[str, ...] = ()
    allow_blocking_tools: bool = False
    allow_complete: bool = False  # the run may end here without an output
    tools: tuple[StageTool, ...] = ()  # a decision for every offered tool
    edges: tuple[Edge, ...] = ()
    max_iterations: int | None = None
    max_revisits: int | None = None
    output: OutputSpec | None = None
    shell_hint: str | None = None  # rendered system block, when the platform needs one
    system_prompt: str | None = None
    # what the model is told when it chooses its next stage (Leviath's words)
    transition_prompt: str | None = None
    fan_out: FanOut | None = None
    hooks: tuple[StageHook, ...] = ()
    interaction_points: tuple[InteractionPoint, ...] = ()
    # the stage may not move on while a sub-agent it started still runs
    requires_children: bool = False
    # sections the agent must have written before the stage ends (Leviath's
    # required regions; the stage is sent back up to max_revisits times)
    required_regions: tuple[RequiredRegion, ...] = ()
    # The stage's context layout (its own, else the blueprint's), in the order
    # the file declares it; empty: the agent keeps free-form context sections.
    regions: tuple[ContextRegion, ...] = ()
    # the window the budgets were resolved against, and the model it is of
    context_window: int | None = None
    tool_routing: ResultRouting | None = None
    # the stage's own models, best first (charter run --stage-models uses them)
    models: tuple[StageModel, ...] = ()
    nudge: NudgePolicy | None = None  # set when the stage, agent or config configures one
    # whether the agent's parent may send it messages while it is here
    accepts_messages: bool = True
    # Where this stage's commands run (None: a plan compiled without one).
    sandbox: SandboxProfile | None = None
    origin: SourceRef | None = None
    # What each file a shell command writes answers to when the session
    # does not offer write_file (otherwise write_file's own decision does):
    # the built-in default for write_file when the plan was compiled.
    redirect_write: Permission


class Grant(_Frozen):
    """A capability grant; ``slot`` scopes it to one authored tool's path."""

    capability: str
    slot: str | None = None
    origin: SourceRef | None = None


class McpServerPlan(_Frozen):
    server: str
    transport: Literal["stdio", "streamable_http"]
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()  # values may hold ${VAR}; expanded after approval
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    connect_capability: str
    call_capability: str
    connect_decision: Decision
    connect_timeout_seconds: int = 30
    timeout_seconds: int = 60
    # Every tool the lock pins for this server (after its filters), offered by
    # a stage or not: a tool the agent does not use is still known, so its
    # presence at run time is not mistaken for a new one.
    pins: tuple[McpToolPin, ...] = ()
    # Whether the compiler read a current lock entry for the server. A locked
    # server offers only tools listed exactly as pinned, even when no stage
    # pins any of them; an unlocked one offers discovered tools with an ask.
    locked: bool = False
    # Where the server was declared: an agent core's manifest, a blueprint's
    # own [[mcp_servers]], or the user's config.toml.
    declared_in: Literal["manifest", "blueprint", "config"] = "manifest"
    origin: SourceRef | None = None


class Limits(_Frozen):
    interaction_timeout_secs: int = 3600  # 0 waits forever
    shell_timeout_secs: int = 60
    # How long one model request may take (the config's request_timeout_secs);
    # None: the provider's default. `charter run --model-time-limit` overrides it.
    model_request_timeout_secs: int | None = None
    default_max_iterations: int = 50
    max_child_depth: int = 3
    max_tool_call_write_bytes: int | None = None
    max_run_write_bytes: int | None = None


class ScriptPermission(_Frozen):
    """What script tools may do through one host function: allow, deny, or
    inherit (defer to the matching built-in tool's decision)."""

    value: Literal["allow", "deny", "inherit"]
    source: SourceRef | None = None
    detail: str = ""  # which scope set it: "config", "blueprint", "default"
    # What a call gets: inherit resolved against the entry stage's decision
    # for the matching built-in (shell, read_file, write_file), as Leviath
    # does; the http and env functions have none and inherit permits them.
    effective: Literal["allow", "deny"] = "allow"


class ScriptPermissions(_Frozen):
    """``[tool_script_permissions]`` after the blueprint's tightening of the
    user's config. Shown and planned; Charter itself runs no script."""

    http_get: ScriptPermission = ScriptPermission(value="inherit", detail="default")
    http_post: ScriptPermission = ScriptPermission(value="inherit", detail="default")
    shell: ScriptPermission = ScriptPermission(value="inherit", detail="default")
    read_file: ScriptPermission = ScriptPermission(value="inherit", detail="default")
    write_file: ScriptPermission = ScriptPermission(value="inherit", detail="default")
    env_var: ScriptPermission = ScriptPermission(value="inherit", detail="default")


class TaintPolicy(_Frozen):
    enabled: bool = False
    on_block: Literal["ask", "deny"] = "ask"
    # (tool, target pattern) pairs that may carry tainted data out.
    allow: tuple[tuple[str, str], ...] = ()


class AgentPlan(_Frozen):
    name: str
    kind: Literal["blueprint", "core", "combined"]
    root: str  # the agent's directory, relative to the project root
    entry_stage: str
    tools: tuple[ToolEntry, ...]
    stages: tuple[Stage, ...]
    grants: tuple[Grant, ...] = ()
    mcp_servers: tuple[McpServerPlan, ...] = ()
    shell: ShellPolicy = Field(default_factory=ShellPolicy)
    limits: Limits = Field(default_factory=Limits)
    taint: TaintPolicy = Field(default_factory=TaintPolicy)
    allow_local_network: bool = False
    # Credential-shaped environment variables the user let tools read
    # ([security] allow_env_vars), e.g. BRAVE_API_KEY for web_search.
    allow_env_vars: tuple[str, ...] = ()
    # The core's skills folder (slots.skills), relative to the project root.
    skills_root: str | None = None
    # A Demiurge core's SOUL.md text, first in every system prompt of its runs.
    soul: str | None = None
    # Present when the agent has script tools.
    script_permissions: ScriptPermissions | None = None
    repetition: RepetitionPolicy | None = None  # nudges out of loops, when the blueprint asks
    # the user's [security] allowed_workdirs: where a run may start without
    # being questioned even in a home directory or at a filesystem root
    allowed_workdirs: tuple[str, ...] = ()
    # caller inputs a run may not start without (required regions seeded from
    # the caller: "task", or a key given as --input KEY=VALUE)
    required_inputs: tuple[str, ...] = ()
    # [compaction]: the summaries a compact edge asks the model for
    compaction: SummaryPolicy | None = None
    # the user's [security] allow_seed_commands: whether command seeds run at all
    allow_seed_commands: bool = True
    # The agent-wide sandbox (MCP servers run under it; stages may tighten it).
    sandbox: SandboxProfile | None = None
    origin: SourceRef | None = None

    def tool(self, name: str) -> ToolEntry | None:
        for t in self.tools:
            if t.name == name:
                return t
        return None

    def stage(self, name: str) -> Stage | None:
        for s in self.stages:
            if s.name == name:
                return s
        return None


class SourceDigest(_Frozen):
    path: str
    sha256: str


class PlanBody(_Frozen):
    schema_version: int = SCHEMA_VERSION
    compiler_version: str
    target_platform: Literal["posix", "windows"]
    shell: str  # the shell the platform resolves, named in the shell tool's description
    agents: tuple[AgentPlan, ...]
    sources: tuple[SourceDigest, ...]

    def agent(self, name: str) -> AgentPlan | None:
        for a in self.agents:
            if a.name == name:
                return a
        return None


class Plan(_Frozen):
    schema_version: int = SCHEMA_VERSION
    digest: str  # "sha256:<hex>" of the canonical JSON of ``body``
    body: PlanBody

    @classmethod
    def seal(cls, body: PlanBody) -> "Plan":
        return cls(schema_version=body.schema_version, digest=digest_of(body), body=body)

    def to_json(self) -> str:
        return dumps_canonical(self.model_dump(mode="json")) + "\n"


def canonical_json(value: Any) -> str:
    """Sorted keys, no insignificant whitespace, UTF-8 text; floats refused."""
    _refuse_floats(value)
    return dumps_canonical(value)


def dumps_canonical(value: Any) -> str:
    """Canonical JSON text without the float check (plan bodies hold none)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest_of(body: PlanBody) -> str:
    # No float check here: no plan field is typed as a float (a test pins
    # that), so a dump cannot hold one, and walking every value of a large
    # plan again would cost more than the hashing.
    text = dumps_canonical(body.model_dump(mode="json"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _refuse_floats(value: Any) -> None:
    stack: list[Any] = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, float):
            raise ValueError("plans hold no floating-point numbers")
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list | tuple):
            stack.extend(v)
