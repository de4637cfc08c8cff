"""What every hook adapter does the same way, whichever agent it answers.

A hook adapter reads one tool-call event from another agent, opens a session
on the compiled plan for the agent and stage it decides for, maps the call
onto the Charter calls it stands for, and runs the gates on each without
executing anything. The agent-specific parts (tool names, argument names, the
answer's JSON shape, what a failure answers) stay in each adapter; the parts
here return a problem text instead of raising, so each adapter can turn it
into its own fail-closed answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from charter.runtime import jsonbound
from charter.runtime.plan.vocabulary import RANK, Permission
from charter.runtime.results import ToolCall

if TYPE_CHECKING:
    from charter.runtime.gates import Outcome
    from charter.runtime.plan.prepared import PreparedPlan
    from charter.runtime.policy.session import Session

__all__ = [
    "MAX_EVENT_BYTES",
    "TOO_LARGE",
    "Alternatives",
    "Fixed",
    "HookOptions",
    "Permission",
    "Refuse",
    "Translation",
    "answer_event",
    "choose_calls",
    "decide_all",
    "decide_translation",
    "drop_none",
    "mcp_plan_name",
    "open_for_event",
    "read_event",
    "said",
    "split_mcp_name",
    "text",
    "worst",
]

# Larger than any tool call a model makes (a whole file written at once
# included); it bounds what a hook reads from a pipe it does not control.
MAX_EVENT_BYTES = 8 * 1024 * 1024
# Why an event past the bound is refused (the server says it in the same words).
TOO_LARGE = f"the hook event is larger than {MAX_EVENT_BYTES} bytes"

# For each Charter call a peer's call stands for: the (tool, arguments)
# alternatives in preference order; the first one the stage offers is used.
Alternatives = list[tuple[str, dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class Fixed:
    """A decision the adapter makes itself, for a peer's tool that no plan
    tool stands for but whose effect is known (it only loads schemas, only
    shows text in the peer's own interface, or is answered by the person in
    the peer's own prompt). An ``ask`` here is one only a person can answer."""

    decision: Permission
    rule: str
    reason: str


class Translation:
    """The Charter calls one peer's call stands for, or why there are none;
    ``fixed`` holds the adapter's own decisions that apply as well (the
    strictest of everything wins); ``note`` says how the call was read where
    the answer should mention it."""

    def __init__(
        self,
        calls: list[ToolCall],
        problem: str = "",
        note: str = "",
        fixed: Sequence[Fixed] = (),
    ) -> None:
        self.calls = calls
        self.problem = problem
        self.note = note
        self.fixed = tuple(fixed)

    @property
    def empty(self) -> bool:
        return not self.calls and not self.fixed


@dataclass(frozen=True, slots=True)
class HookOptions:
    """What the hook command says about the plan to decide with."""

    plan_path: str | Path
    agent: str | None = None  # needed when the plan holds several
    stage: str | None = None  # default: the agent's entry stage
    workspace: str | Path | None = None  # default: the event's cwd
    allow: tuple[str, ...] = ()  # --allow: tools whose liftable ask is lifted


def text(value: Any) -> str | None:
    """``value`` if it is a string, else None."""
    return value if isinstance(value, str) else None


def drop_none(args: Mapping[str, Any]) -> dict[str, Any]:
    # A field the peer left out stays out, so the schema gate names it.
    return {k: v for k, v in args.items() if v is not None}


def read_event(raw: bytes, event_name: str) -> dict[str, Any] | str:
    """The event object in ``raw``, or why it cannot be used.

    An event that names another hook event is refused; one that names none is
    taken as ``event_name`` (the name is informative, the fields decide)."""
    if len(raw) > MAX_EVENT_BYTES:
        return TOO_LARGE
    try:
        # Charter's own nesting bound: what the interpreter's parser refuses
        # by itself differs between Python versions.
        event = jsonbound.loads(raw.decode("utf-8"))
    except jsonbound.RepeatedKey as exc:
        return f"the hook event cannot be read: {exc}"
    except (UnicodeDecodeError, ValueError) as exc:
        return f"the hook event is not JSON ({exc})"
    if not isinstance(event, dict):
        return "the hook event is not a JSON object"
    name = event.get("hook_event_name")
    if name is not None and name != event_name:
        return f"this hook answers {event_name} events, not {name!r}"
    return event


def _only_agent(plan: PreparedPlan) -> tuple[str, str]:
    """The plan's one agent and "", or "" and why there is not exactly one."""
    names = plan.agent_names
    if len(names) != 1:
        shown = ", ".join(names)
        return "", f"the plan holds {len(names)} agents ({shown}); pass --agent"
    return names[0], ""


def open_for_event(
    event: Mapping[str, Any],
    options: HookOptions,
    prepared: PreparedPlan | None = None,
    *,
    unattended: bool = False,
) -> Session | str:
    """A session on the plan for the event's call, or why there is none.

    ``prepared`` is a plan the caller already holds (the decision server);
    without it the plan file is read for this one call. The workspace is
    ``options.workspace`` when given, else the event's ``cwd``. ``unattended``
    selects the stage's unattended tool set (a peer's sub-agent: nobody
    watches it)."""
    from charter.runtime.plan.loader import PlanError
    from charter.runtime.plan.prepared import load_for_agents
    from charter.runtime.policy.session import SessionError, open_session

    agent = options.agent
    if prepared is not None:
        plan = prepared
    else:
        try:
            # A hook runs once per tool call of another agent: load only the agent
            # it decides for, and build validators only when a call needs them.
            plan = load_for_agents(options.plan_path, [agent] if agent is not None else [])
        except PlanError as exc:
            return f"the plan cannot be used: {exc}"
    if agent is None:
        agent, problem = _only_agent(plan)
        if problem:
            return problem
        if prepared is None:
            try:
                plan = load_for_agents(options.plan_path, [agent])
            except PlanError as exc:
                return f"the plan cannot be used: {exc}"
    ws = options.workspace if options.workspace is not None else text(event.get("cwd"))
    if not ws:
        return "no workspace: the event has no cwd and --workspace was not given"
    try:
        return open_session(
            plan,
            agent,
            workspace=ws,
            stage=options.stage,
            allow=options.allow,
            unattended=unattended,
        )
    except SessionError as exc:
        return str(exc)


# An adapter's fail-closed answer: the problem, and the event when it was read.
Refuse = Callable[[str, "Mapping[str, Any] | None"], dict[str, Any]]


def answer_event(
    raw: bytes,
    event_name: str,
    options: HookOptions,
    *,
    refuse: Refuse,
    decide: Callable[[Mapping[str, Any], Session], dict[str, Any]],
    prepared: PreparedPlan | None = None,
    unattended: Callable[[Mapping[str, Any]], bool] | None = None,
) -> dict[str, Any]:
    """The hook's answer to one raw stdin payload: ``decide`` once the event
    is read and the session open, ``refuse`` with the reason otherwise (the
    adapter's fail-closed answer). Never raises. ``prepared`` and
    ``unattended`` are passed on to :func:`open_for_event`."""
    event: Mapping[str, Any] | None = None
    try:
        found = read_event(raw, event_name)
        if isinstance(found, str):
            return refuse(found, None)
        event = found
        alone = unattended(event) if unattended is not None else False
        session = open_for_event(event, options, prepared, unattended=alone)
        if isinstance(session, str):
            return refuse(session, event)
        return decide(event, session)
    except Exception as exc:  # fail closed on anything unforeseen
        return refuse(f"the hook could not decide ({type(exc).__name__}: {exc})", event)


def split_mcp_name(tool: str) -> tuple[str, str] | None:
    """``(server, tool)`` from ``mcp__<server>__<tool>``, or None."""
    if not tool.startswith("mcp__"):
        return None
    server, sep, name = tool[len("mcp__") :].partition("__")
    if not sep or not server or not name:
        return None
    return server, name


def mcp_plan_name(session: Session, server: str, tool: str) -> str | None:
    """The plan's name for ``tool`` on MCP server ``server``, or None when the
    plan does not hold it."""
    for entry in session.agent.tools.values():
        if entry.source == "mcp" and entry.mcp is not None:
            if entry.mcp.server == server and entry.mcp.tool == tool:
                return str(entry.name)
    from charter.runtime.mcp.naming import mcp_safe_name

    # A plan tool of another kind (an authored tool named `a__b`) never
    # stands for an MCP server's tool.
    safe = mcp_safe_name(server, tool)
    found = session.agent.tools.get(safe)
    return safe if found is not None and found.source == "mcp" else None


def choose_calls(
    session: Session, found: Sequence[Alternatives], call_id: str = ""
) -> list[ToolCall]:
    """One Charter call per entry of ``found``: the first alternative the
    stage offers, else the first (which the visibility gate then refuses,
    naming what the stage does offer)."""
    offered = session.offered()
    calls = []
    for alts in found:
        tool, args = next((a for a in alts if a[0] in offered), alts[0])
        calls.append(ToolCall(tool, drop_none(args), call_id))
    return calls


def decide_all(session: Session, calls: Sequence[ToolCall]) -> list[Outcome]:
    """Every gate's answer for each call, nothing executed."""
    from charter.runtime.gates import decide

    return [decide(session, call) for call in calls]


def decide_translation(session: Session, translation: Translation, tool: str) -> list[Outcome]:
    """The gates' answer for each Charter call of ``translation``, then the
    adapter's own decisions as outcomes of the gate ``client`` (never liftable
    by a launch flag)."""
    from charter.runtime.gates import Outcome

    out = decide_all(session, translation.calls)
    out.extend(Outcome(f.decision, "client", f.rule, f.reason, tool) for f in translation.fixed)
    return out


# How many further reasons a client's prompt lists after the deciding one.
_MORE_REASONS = 4


def said(out: Outcome, note: str = "") -> str:
    """The reason a client shows for ``out``: the deciding reason with its
    gate and rule, then every other distinct reason the shell guard found
    that needs someone too (a compound command can have several: a person
    approving it must see them all), up to a few, and how many more."""
    text = f"{out.reason} [{out.gate}/{out.rule}]"
    if out.shell is not None:
        others: list[str] = []
        seen = {out.reason}
        for f in out.shell.findings:
            if f.decision == "allow" or f.message in seen or f.message in out.reason:
                continue
            seen.add(f.message)
            others.append(f"{f.message} [{f.rule}]")
        if others:
            shown = others[:_MORE_REASONS]
            rest = len(others) - len(shown)
            text += "; also: " + "; ".join(shown) + (f"; and {rest} more" if rest else "")
    return text + (f" ({note})" if note else "")


def worst(outcomes: Sequence[Outcome]) -> Outcome:
    """The strictest outcome (deny over ask over allow; the first of equals)."""
    found = outcomes[0]
    for out in outcomes[1:]:
        if RANK[out.decision] > RANK[found.decision]:
            found = out
    return found
