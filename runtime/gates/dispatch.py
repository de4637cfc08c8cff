"""Gate 10, dispatch: with every gate passed, the tool runs where its plan
entry's ``source`` says.

- ``authored``: only now is the tool's module read, digest-checked and
  imported (``charter.runtime.tools.authored``).
- ``mcp``: the call goes to the connected server, which checks the call
  capability again against the same grants.
- ``script``: the plan's copy of the Rhai script, run by Charter's own
  interpreter (``charter.runtime.tools.scripts``), its host functions
  passing the URL policy, the shell guard and workspace confinement.
- ``builtin``: the registry's implementation for the entry's ``impl``. It
  must serve the tool with the path arguments the plan lists, or the
  confinement gate checked other arguments than the tool opens. A
  delegating tool's child controls are checked here, whichever runner
  starts the child, so a narrowing is never widened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from charter.runtime.gates.outcome import Outcome
from charter.runtime.plan.prepared import usable_grants
from charter.runtime.policy.session import Session
from charter.runtime.results import ToolCall, ToolResult, refusal

if TYPE_CHECKING:
    # Imported when a call is run: deciding never loads the tool modules.
    from charter.runtime.tools.base import ToolRuntime
    from charter.runtime.tools.registry import Registry

__all__ = ["GATE", "run"]

GATE = "dispatch"


def run(
    session: Session,
    call: ToolCall,
    out: Outcome,
    registry: Registry | None,
    runtime: ToolRuntime,
    *,
    approved: bool,
) -> ToolResult:
    entry = out.entry
    if entry is not None and entry.source == "authored":
        from charter.runtime.tools.authored import TurnInfo, run_authored

        turn = TurnInfo(session.agent.agent.name, session.stage_name, session.run_id, call.call_id)
        return run_authored(
            entry, call.args, runtime, turn=turn, agent_root=session.agent.agent.root
        )
    if entry is not None and entry.source == "mcp":
        if session.mcp is None:
            return refusal(
                "unavailable",
                GATE,
                "mcp-not-connected",
                f"'{entry.name}' belongs to an MCP server this session is not connected to",
            )
        return session.mcp.call(
            entry.name,
            call.args,
            grants=usable_grants(session.agent, entry),
            cancel=runtime.cancel,
        )
    if entry is not None and entry.source == "script" and entry.script is not None:
        from charter.runtime.tools.scripts import run_script_tool

        if entry.script.source is None:
            return refusal(
                "unavailable",
                GATE,
                "script-not-in-plan",
                f"'{entry.name}' ({entry.script.path}): this plan was compiled by a Charter that "
                "did not carry script tools' text; compile it again to run the script",
            )

        return run_script_tool(entry, call.args, runtime, session)
    if entry is None or entry.source != "builtin":
        return refusal(
            "unavailable",
            GATE,
            "no-builtin-implementation",
            f"'{call.tool}' is not a built-in tool; this runtime dispatches built-ins only",
        )
    if registry is None:
        from charter.runtime.tools.registry import IMPLEMENTATIONS

        registry = IMPLEMENTATIONS
    if entry.guard == "delegate":
        from charter.runtime.tools.tasks import guard_delegate

        refused = guard_delegate(call.args, session)
        if refused is not None:
            return refused
    reg = registry.registration(entry.impl)
    if reg is None or entry.name not in reg.serves:
        return refusal(
            "unavailable",
            GATE,
            "no-implementation",
            f"'{entry.name}' (implementation '{entry.impl}') is not available in this runtime",
        )
    if reg.serves[entry.name] != entry.path_args:
        return refusal(
            "unavailable",
            GATE,
            "path-args-mismatch",
            f"'{entry.name}' cannot run: the plan lists other path arguments for it than this "
            "runtime's implementation reads, so its paths were not all confined; compile the "
            "plan again with this Charter",
        )
    from charter.runtime.tools.registry import calling_session

    try:
        # ``approved``: a person said yes, which is what a credential path
        # inside the workspace needs before the tool opens it. The session
        # is visible to tools that report on it (tools_list, delegate_task).
        with calling_session(session):
            return reg.run(call.args, runtime, tool=entry.name, approved=approved)
    except Exception as exc:  # a tool bug becomes an error result the model can read
        return ToolResult("error", f"[error] {entry.name} failed: {type(exc).__name__}: {exc}")
