"""A loaded plan made ready for deciding tool calls, and the session that uses it.

Loading a plan (``charter.runtime.loader``) proves it is intact; preparing it
(:func:`prepare`) builds what every decision needs so no call pays for it:
lookup maps from names to tool entries and stage decisions, and one compiled
argument validator per distinct schema text. Validators use a closed
``referencing.Registry()``: a ``$ref`` to anything outside the schema itself
fails to resolve instead of fetching from the network or the disk.

A :class:`Session` is one agent running in one stage with the launch flags and
the workspace it was started with; it also carries the run-scoped state the
gates keep (approval cache, data-flow labels).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from charter.runtime.catalog import resolve_builtin
from charter.runtime.plan import AgentPlan, Decision, Plan, Stage, ToolEntry, canonical_json

if TYPE_CHECKING:
    from charter.runtime.approval import ApprovalCache
    from charter.runtime.mcp.session import McpBinding
    from charter.runtime.taint import TaintTracker

__all__ = [
    "PreparedAgent",
    "PreparedPlan",
    "PreparedStage",
    "SchemaCheck",
    "Session",
    "SessionError",
    "fast_check",
    "load_for_agents",
    "open_session",
    "prepare",
]

# Shell-like implementations: their calls go through the shell guard.
SHELL_IMPLS = frozenset({"exec.command"})


class SessionError(Exception):
    """The session cannot be opened (unknown agent or stage); the message says why."""


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


@dataclass(frozen=True, slots=True)
class PreparedStage:
    """A stage with its offered tool sets and decisions indexed for lookups."""

    stage: Stage
    attended: frozenset[str]
    unattended: frozenset[str]
    decisions: Mapping[str, Decision]

    def offered(self, *, unattended: bool) -> frozenset[str]:
        return self.unattended if unattended else self.attended


@dataclass(frozen=True, slots=True)
class PreparedAgent:
    """An agent's plan indexed for deciding calls: tools, schema checks, stages, grants."""

    agent: AgentPlan
    tools: Mapping[str, ToolEntry]
    checks: Mapping[str, SchemaCheck]
    stages: Mapping[str, PreparedStage]
    # Capabilities usable by every tool, and per authored-tool slot.
    grants: frozenset[str]
    slot_grants: Mapping[str, frozenset[str]]
    # Whether the capability gate applies: an agent with an agent.yaml core
    # declares grants; a blueprint-only agent declares none and is not checked.
    checks_capabilities: bool
    # (stage, tool) -> the plan part of a decision's explanation, built on first use.
    provenance_cache: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    # Plan tools that connected MCP servers do not offer (changed since they
    # were locked, not listed, server not connected), with the reason a call
    # is told; filled by charter.runtime.mcp.session.overlay.
    unavailable: Mapping[str, str] = field(default_factory=dict)

    def resolve_name(self, name: str, offered: frozenset[str]) -> str | None:
        """The plan's name for what the model called ``name``: the name itself
        when the stage offers it, else the canonical built-in an alias names
        (``bash`` -> ``shell``) when that is offered."""
        if name in offered:
            return name
        builtin = resolve_builtin(name)
        if builtin is not None and builtin.name in offered:
            return builtin.name
        return None


@dataclass(frozen=True, slots=True)
class PreparedPlan:
    """A plan ready for decisions. ``plan`` may hold only the prepared agents
    (see :func:`load_for_agents`); ``agent_names`` lists every agent the
    plan file holds."""

    plan: Plan
    agents: Mapping[str, PreparedAgent]
    agent_names: tuple[str, ...] = ()

    @property
    def shell(self) -> str:
        return self.plan.body.shell


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


def _is_catalog_schema(entry: ToolEntry) -> bool:
    if entry.source != "builtin" or entry.input_schema is None:
        return False
    builtin = resolve_builtin(entry.name)
    return builtin is not None and builtin.input_schema == entry.input_schema


def _slot_of(agent: AgentPlan, entry: ToolEntry) -> str | None:
    if entry.authored is None:
        return None
    prefix = "" if agent.root in ("", ".") else agent.root.rstrip("/") + "/"
    return entry.authored.directory.removeprefix(prefix)


def _prepare_agent(
    agent: AgentPlan, cache: dict[str, SchemaCheck], *, eager: bool = True
) -> PreparedAgent:
    tools = {t.name: t for t in agent.tools}
    checks: dict[str, SchemaCheck] = {}
    for t in agent.tools:
        if t.input_schema is None:
            checks[t.name] = SchemaCheck(None, off_note=t.validation_note or "off in the plan")
            continue
        # Cross-field rules (not shown to the model) are checked with the
        # schema: "start needs goal" holds before any approval is asked.
        text = t.input_schema
        if t.input_rules is not None:
            text = json.dumps(
                {"allOf": [json.loads(t.input_schema), json.loads(t.input_rules)]},
                sort_keys=True,
                separators=(",", ":"),
            )
        # Agents and tools share schema texts; compile each distinct text once.
        check = cache.get(text)
        if check is None:
            check = cache[text] = SchemaCheck(text, trusted=_is_catalog_schema(t), eager=eager)
        checks[t.name] = check
    stages = {
        s.name: PreparedStage(
            stage=s,
            attended=frozenset(s.attended),
            unattended=frozenset(s.unattended),
            decisions=MappingProxyType({st.name: st.decision for st in s.tools}),
        )
        for s in agent.stages
    }
    slots: dict[str, set[str]] = {}
    for g in agent.grants:
        if g.slot is not None:
            slots.setdefault(g.slot, set()).add(g.capability)
    return PreparedAgent(
        agent=agent,
        tools=MappingProxyType(tools),
        checks=MappingProxyType(checks),
        stages=MappingProxyType(stages),
        grants=frozenset(g.capability for g in agent.grants if g.slot is None),
        slot_grants=MappingProxyType({k: frozenset(v) for k, v in slots.items()}),
        checks_capabilities=agent.kind != "blueprint",
    )


def prepare(plan: Plan, *, agents: Iterable[str] | None = None, eager: bool = True) -> PreparedPlan:
    """Build lookup maps and argument validators for ``plan`` (all agents, or
    only the named ones: a one-shot CLI decision needs just one). With
    ``eager=False`` each validator is compiled when a call first needs it."""
    wanted = None if agents is None else set(agents)
    cache: dict[str, SchemaCheck] = {}
    prepared = {
        a.name: _prepare_agent(a, cache, eager=eager)
        for a in plan.body.agents
        if wanted is None or a.name in wanted
    }
    names = tuple(a.name for a in plan.body.agents)
    return PreparedPlan(plan=plan, agents=MappingProxyType(prepared), agent_names=names)


# A plan file as the compiler writes it: canonical JSON, so the body's text is
# exactly what the digest was computed over, followed by this tail.
_HEAD = b'{"body":'
_TAIL = re.compile(rb',"digest":"(sha256:[0-9a-f]{64})","schema_version":(\d{1,9})\}\n?\Z')


_AGENTS_OPEN = b'{"agents":['
_AGENTS_CLOSE = b'],"compiler_version":'


@functools.cache
def _agent_start() -> re.Pattern[bytes] | None:
    """Where an agent object starts in canonical JSON: ``{"`` and the first of
    its field names in sorted order. A JSON string cannot hold an unescaped
    quote, so the sequence marks only a real object start, and only an agent
    when no model nested in an agent has a field of that name (checked here,
    so a change to the plan models can never make the split wrong: without a
    usable marker the whole body is parsed)."""
    import typing

    from pydantic import BaseModel

    first = min(AgentPlan.model_fields)
    seen: set[type] = set()
    todo: list[Any] = [f.annotation for f in AgentPlan.model_fields.values()]
    while todo:
        tp = todo.pop()
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if tp in seen:
                continue
            seen.add(tp)
            if first in tp.model_fields:
                return None
            todo.extend(f.annotation for f in tp.model_fields.values())
        else:
            todo.extend(typing.get_args(tp))
    return re.compile(re.escape(b'{"' + first.encode("ascii") + b'":'))


def _pick_agents(body: bytes, wanted: set[str]) -> Any | None:
    """The body with only the wanted agents, parsing none of the others; None
    when the bytes are not laid out as expected (the caller parses it all)."""
    from pydantic import ValidationError

    from charter.runtime.plan import PlanBody

    if not body.startswith(_AGENTS_OPEN) or body.count(_AGENTS_CLOSE) != 1:
        return None
    end = body.index(_AGENTS_CLOSE)
    agents = body[len(_AGENTS_OPEN) : end]
    marker = _agent_start()
    if marker is None:
        return None
    starts = [m.start() for m in marker.finditer(agents)]
    if not starts or starts[0] != 0:
        return None
    bounds = [*starts, len(agents) + 1]
    chosen: list[Any] = []
    chunks: dict[str, bytes] = {}
    for a, b in zip(bounds, bounds[1:], strict=False):
        if b <= len(agents) and agents[b - 1 : b] != b",":
            return None
        chunk = agents[a : b - 1]
        if not any(
            b'"name":' + json.dumps(n, ensure_ascii=False).encode("utf-8") in chunk for n in wanted
        ):
            continue
        try:
            obj = json.loads(chunk)
        except (ValueError, RecursionError):
            return None
        if isinstance(obj, dict) and obj.get("name") in wanted:
            chosen.append(obj)
            chunks[obj["name"]] = chunk
    if {c["name"] for c in chosen} != wanted:
        return None  # an agent is missing: the full path reports it with every name
    rest_bytes = b"{" + body[end + 2 :]
    try:
        rest = json.loads(rest_bytes)
        partial = PlanBody.model_validate({**rest, "agents": chosen})
    except (ValueError, TypeError, RecursionError, ValidationError):
        return None
    # The digest covers the bytes as written. A plan written by another
    # version of the models (a field added since, say) still matches its own
    # digest, but would not survive the full loader, which hashes what these
    # models make of it; re-serialising the parts used here detects that.
    dumped = partial.model_dump(mode="json")
    agents_out = dumped.pop("agents")
    if canonical_json(dumped).encode("utf-8") != rest_bytes:
        return None
    for model in agents_out:
        if canonical_json(model).encode("utf-8") != chunks[model["name"]]:
            return None
    return partial


def load_for_agents(
    path: str | Path, agents: Iterable[str] | None, *, eager: bool = False
) -> PreparedPlan:
    """Load a plan for deciding calls of the named agents only (every agent,
    through the full loader, when ``agents`` is None). Raises ``PlanError``.

    A plan written by the compiler is canonical JSON, so its digest can be
    checked on the body's bytes as they are (milliseconds, where the full
    loader re-serialises every agent through the models: most of a second
    for 100 agents), and only the agents asked for are parsed, validated and
    re-serialised to prove these models read them exactly as written. A file
    in any other form, or one that fails any of these checks, goes through
    the full loader, which refuses it with the problem named. When named
    agents are loaded this way, ``agent_names`` lists only them.
    """
    from charter.runtime.loader import MAX_PLAN_BYTES, load_plan
    from charter.runtime.plan import SCHEMA_VERSION

    wanted = None if agents is None else set(agents)
    p = Path(path)
    data = b""
    if wanted:
        try:
            if p.stat().st_size <= MAX_PLAN_BYTES:
                data = p.read_bytes()
        except OSError:
            data = b""  # the full loader reports it
    tail = _TAIL.search(data) if data.startswith(_HEAD) else None
    if wanted and tail is not None and int(tail.group(2)) == SCHEMA_VERSION:
        body_bytes = data[len(_HEAD) : tail.start()]
        digest = tail.group(1).decode("ascii")
        if "sha256:" + hashlib.sha256(body_bytes).hexdigest() == digest:
            picked = _pick_agents(body_bytes, wanted)
            if picked is not None:
                # The plan object holds only these agents; its digest is the
                # verified digest of the whole file.
                plan = Plan.model_construct(
                    schema_version=SCHEMA_VERSION, digest=digest, body=picked
                )
                cache: dict[str, SchemaCheck] = {}
                prepared = {a.name: _prepare_agent(a, cache, eager=eager) for a in picked.agents}
                names = tuple(a.name for a in picked.agents)
                return PreparedPlan(plan, MappingProxyType(prepared), names)
    return prepare(load_plan(p), agents=wanted, eager=eager)


def usable_grants(agent: PreparedAgent, entry: ToolEntry) -> frozenset[str]:
    slot = _slot_of(agent.agent, entry)
    if slot is None:
        return agent.grants
    return agent.grants | agent.slot_grants.get(slot, frozenset())


@dataclass(slots=True)
class Session:
    """One agent in one stage, with its launch flags and workspace.

    ``allow`` holds canonical tool names from ``--allow``; ``yolo`` lifts every
    liftable ask. Neither ever lifts a deny. ``unattended`` selects the
    stage's unattended tool set (nobody is watching, blocking tools removed).
    """

    prepared: PreparedPlan
    agent: PreparedAgent
    stage_name: str
    workspace: Path
    unattended: bool = False
    yolo: bool = False
    allow: frozenset[str] = frozenset()
    # A parent's narrowing of what a child may use (delegate_task ``tools``):
    # None keeps the stage's own set; otherwise only these names stay offered.
    narrow: frozenset[str] | None = None
    approvals: ApprovalCache | None = None
    taint: TaintTracker | None = None
    run_id: str = ""
    # The agent's connected MCP servers (charter.runtime.mcp.session.McpRuntime.attach).
    mcp: McpBinding | None = None
    # Shell-guard reasons the stage's sandbox answers, set by charter run only
    # while that sandbox is in force (charter.runtime.sandbox.contained).
    contained: frozenset[str] = frozenset()
    _stage: PreparedStage | None = field(default=None, repr=False)

    @property
    def stage(self) -> PreparedStage:
        if self._stage is None or self._stage.stage.name != self.stage_name:
            self._stage = self.agent.stages[self.stage_name]
        return self._stage

    @property
    def shell(self) -> str:
        return self.prepared.shell

    def enter_stage(self, name: str) -> None:
        """Move to another stage; approvals granted "for this stage" lapse."""
        if name not in self.agent.stages:
            raise SessionError(_unknown("stage", name, self.agent.stages))
        if name != self.stage_name and self.approvals is not None:
            self.approvals.stage_changed(name)
        self.stage_name = name
        self._stage = None

    def offered(self) -> frozenset[str]:
        """The tools this session may call in its current stage: the stage's
        attended or unattended set, narrowed for a delegated child."""
        base = self.stage.offered(unattended=self.unattended)
        return base if self.narrow is None else base & self.narrow

    def lifted(self, tool: str) -> bool:
        """Whether a launch flag covers ``tool`` (only liftable asks use it)."""
        return self.yolo or tool in self.allow


def _unknown(what: str, name: str, known: Iterable[str]) -> str:
    names = sorted(known)
    listed = ", ".join(names) if names else "none"
    return f"no {what} named {name!r} in the plan (known: {listed})"


def normalise_allow(names: Iterable[str]) -> frozenset[str]:
    """``--allow`` values as canonical tool names (``bash`` -> ``shell``)."""
    out: set[str] = set()
    for n in names:
        builtin = resolve_builtin(n)
        out.add(builtin.name if builtin is not None else n)
    return frozenset(out)


def open_session(
    plan: Plan | PreparedPlan,
    agent: str,
    *,
    workspace: str | Path,
    stage: str | None = None,
    unattended: bool = False,
    yolo: bool = False,
    allow: Iterable[str] = (),
    run_id: str = "",
    approvals: ApprovalCache | None = None,
    narrow: Iterable[str] | None = None,
) -> Session:
    """A session for ``agent`` (its entry stage unless ``stage`` is given).
    Data-flow tracking is attached when the agent's plan turns it on."""
    prepared = plan if isinstance(plan, PreparedPlan) else prepare(plan, agents=[agent])
    found = prepared.agents.get(agent)
    if found is None:
        raise SessionError(_unknown("agent", agent, prepared.agent_names))
    stage_name = stage if stage is not None else found.agent.entry_stage
    if stage_name not in found.stages:
        raise SessionError(_unknown("stage", stage_name, found.stages))
    from charter.runtime.approval import ApprovalCache

    taint = None
    if found.agent.taint.enabled:
        from charter.runtime.taint import TaintTracker

        taint = TaintTracker(found.agent.taint)
    return Session(
        prepared=prepared,
        agent=found,
        stage_name=stage_name,
        workspace=Path(workspace),
        unattended=unattended,
        yolo=yolo,
        allow=normalise_allow(allow),
        approvals=approvals if approvals is not None else ApprovalCache(stage_name),
        taint=taint,
        run_id=run_id,
        narrow=None if narrow is None else normalise_allow(narrow),
    )
