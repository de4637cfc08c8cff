"""Gate 1, visibility: does the stage offer the tool?

The session offers its stage's attended or unattended tool set (narrowed
for a delegated child); an alias the plan lists for a tool (``bash`` for
``shell``) calls that tool. A refusal says what the session may call.
"""

from __future__ import annotations

from charter.runtime.gates.outcome import Outcome, deny
from charter.runtime.plan import ToolEntry
from charter.runtime.policy.session import Session
from charter.runtime.results import ToolCall

__all__ = ["GATE", "check"]

GATE = "visibility"


def check(session: Session, call: ToolCall) -> Outcome | ToolEntry:
    """The plan's entry for the tool the call names, or the refusal."""
    agent = session.agent
    offered = session.offered()
    name = agent.resolve_name(call.tool, offered)
    if name is None:
        return _refusal(session, call, offered)
    entry = agent.tools.get(name)
    if entry is None:
        return deny(
            call,
            GATE,
            "no-tool-entry",
            f"the plan offers '{name}' but holds no entry for it",
            "unavailable",
            canonical=name,
        )
    return entry


def _refusal(session: Session, call: ToolCall, offered: frozenset[str]) -> Outcome:
    agent = session.agent
    listed = ", ".join(sorted(offered)) or "nothing"
    gone = agent.unavailable.get(call.tool)
    if gone is not None:  # an MCP tool the connected servers do not offer now
        return deny(
            call,
            GATE,
            "mcp-tool-unavailable",
            f"'{call.tool}' is not available: {gone}. You may call: {listed}",
            "unavailable",
        )
    stage = session.stage
    where = f"stage '{stage.stage.name}'"
    if session.unattended and agent.resolve_name(call.tool, stage.attended) is not None:
        rule, why = "not-offered-unattended", f"is not offered in {where} when nobody is watching"
    elif agent.resolve_name(call.tool, frozenset(agent.tools)) is not None:
        rule, why = "not-offered-in-stage", f"is not offered in {where}"
    else:
        rule, why = "unknown-tool", "is not a tool of this agent"
    return deny(call, GATE, rule, f"'{call.tool}' {why}. You may call: {listed}", "unavailable")
