"""What the pipeline records about a call: the audit log's events, and the
executables a shell call runs.

For a shell call the approval request and the audit events also name the
resolved shell and, best effort, the command's own executable
(``charter.runtime.tools.executables``). They are resolved only when a
person is asked or an event is written, at most once per call, so deciding
stays free of file-system look-ups.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from charter.runtime.gates.outcome import Outcome
from charter.runtime.policy.session import Session
from charter.runtime.results import ToolCall, ToolResult

if TYPE_CHECKING:
    from charter.runtime.audit import AuditLog
    from charter.runtime.tools.base import ToolRuntime
    from charter.runtime.tools.executables import Executables

__all__ = ["audit", "call_executables", "ran_executables"]


def call_executables(
    session: Session, call: ToolCall, out: Outcome, runtime: ToolRuntime
) -> Executables:
    """What the shell call would execute, resolved from the runtime the call
    will run with (its shell, environment and workspace), never raising."""
    from charter.runtime.tools.executables import UNKNOWN
    from charter.runtime.tools.executables import call_executables as resolve

    if not isinstance(call.args, dict):
        return UNKNOWN
    return resolve(
        call.args,
        tool=out.entry.name if out.entry is not None else out.canonical,
        shell=runtime.shell,
        env=runtime.env,
        workspace=runtime.workspace or session.workspace,
    )


def ran_executables(result: ToolResult, planned: Executables) -> dict[str, str | None]:
    """The executables for the execution event: what the shell tool itself
    resolved when it ran (its result names them), else what was resolved
    before it ran (a refusal or a background start reports none)."""
    data = result.data
    if "shell" in data and "command_executable" in data:
        shell, program = data["shell"], data["command_executable"]
        return {
            "shell": shell if isinstance(shell, str) else None,
            "command": program if isinstance(program, str) else None,
        }
    return planned.as_dict()


def audit(
    log: AuditLog | None,
    event: str,
    session: Session,
    call: ToolCall,
    out: Outcome,
    redact: Callable[[str], str],
    **extra: Any,
) -> None:
    """Write one ``decision`` or ``execution`` event for the call, if logging."""
    if log is None:
        return
    from charter.runtime.audit import args_digest

    prov = out.provenance
    log.write(
        event,
        run=session.run_id or None,
        call_id=call.call_id or None,
        agent=session.agent.agent.name,
        stage=session.stage_name,
        tool=out.canonical or call.tool,
        args_digest=args_digest(call.args if isinstance(call.args, dict) else {}, redact),
        gate=out.gate,
        rule=out.rule,
        decision=out.decision,
        reason=out.reason,
        provenance=prov.get("explain") if prov else None,
        fingerprint=out.fingerprint,
        **extra,
    )
