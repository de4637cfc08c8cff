"""delegate_task's child controls, checked against the plan before any
sub-agent starts: the core must exist, and tools and slots may only narrow
what that core has."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from charter.runtime.results import ToolResult, refusal

if TYPE_CHECKING:
    from charter.runtime.policy.session import Session

__all__ = ["BASE_INPUT", "BASE_OUTPUT", "ChildControls", "check_child_controls", "guard_delegate"]


# Charter's agent cores have one input and one output step; these are the
# only slot ids a child pipeline can be narrowed to.
BASE_INPUT = "base_input"
BASE_OUTPUT = "base_output"


@dataclass(frozen=True, slots=True)
class ChildControls:
    core: str
    tools: tuple[str, ...] | None  # None: every tool the child core has
    input_slots: tuple[str, ...]
    output_slots: tuple[str, ...]
    use_bootstrap: bool


def _slots(value: Any, base: str, what: str) -> tuple[str, ...] | str:
    if value is None or value == "all":
        return (base,)
    if isinstance(value, list | tuple):
        if not value:
            return (base,)
        unknown = [str(v) for v in value if v != base]
        if unknown:
            return (
                f"{what} {', '.join(repr(u) for u in unknown)} not in the child core's pipeline "
                f"(its only {what.split()[0]} slot is '{base}')"
            )
        return (base,)
    return f'{what} must be "all" or a list of slot ids'


def check_child_controls(
    args: Mapping[str, Any], session: Session | None
) -> ChildControls | ToolResult:
    """Validate delegate_task's child selection against the plan: the core
    must exist, and tools / input_slots / output_slots may only narrow what
    the child core has. Anything invalid is a tool error naming it."""

    def bad(message: str) -> ToolResult:
        return refusal("error", "dispatch", "delegate-invalid", message)

    if session is None:
        return bad("delegate_task can only be checked inside a gated call")
    agents = session.prepared.agents
    core = str(args.get("core_id") or session.agent.agent.name)
    child = agents.get(core)
    if child is None:
        known = ", ".join(sorted(agents)) or "none"
        return bad(f"core_id {core!r} is not an agent core of this plan (cores: {known})")
    if args.get("context_mode", "isolated") != "isolated":
        return bad("context_mode 'fork' is not supported in this runtime; use 'isolated'")
    raw_tools = args.get("tools", "all")
    tools: tuple[str, ...] | None
    if raw_tools is None or raw_tools == "all":
        tools = None
    elif raw_tools == "none":
        tools = ()
    elif isinstance(raw_tools, list | tuple):
        have = set(child.tools)
        unknown = [str(t) for t in raw_tools if t not in have]
        if unknown:
            listed = ", ".join(sorted(have)) or "none"
            return bad(
                f"tools {', '.join(repr(u) for u in unknown)} are not tools of core {core!r}; "
                f"tools can only narrow its set ({listed})"
            )
        tools = tuple(str(t) for t in raw_tools)
    else:
        return bad('tools must be "all", "none" or a list of tool names')
    ins = _slots(args.get("input_slots", [BASE_INPUT]), BASE_INPUT, "input slots")
    if isinstance(ins, str):
        return bad(ins)
    outs = _slots(args.get("output_slots", [BASE_OUTPUT]), BASE_OUTPUT, "output slots")
    if isinstance(outs, str):
        return bad(outs)
    return ChildControls(core, tools, ins, outs, bool(args.get("use_bootstrap", False)))


def guard_delegate(args: Mapping[str, Any], session: Session | None) -> ToolResult | None:
    """None when delegate_task's child controls are valid and can be
    honoured; otherwise the tool error to return instead of starting a child.
    The gate pipeline calls this before any sub-agent implementation, so a
    narrowing is never silently widened, whichever runner starts the child."""
    controls = check_child_controls(args, session)
    if isinstance(controls, ToolResult):
        return controls
    # A narrowed tool list is honoured by the run loop's child runner, which
    # opens the child's session with only those tools offered.
    return None
