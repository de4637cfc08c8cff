"""The pipeline: every call passes the same gates, in the same order.

:func:`decide` runs the gates that need nobody (visibility, schema,
capability, permission, confinement, shell, url, dataflow) without side
effects and reports what would happen; :func:`execute` also asks a person
where an ask remains (approval), runs the tool (dispatch) and writes the
audit log. A refused or malformed call never reaches the approval provider
and never counts as work.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING

from charter.runtime.gates import (
    approval,
    capability,
    confinement,
    dataflow,
    dispatch,
    permission,
    records,
    schema,
    shell,
    url,
    visibility,
)
from charter.runtime.gates.outcome import Outcome
from charter.runtime.results import ToolCall, ToolResult

if TYPE_CHECKING:
    from charter.runtime.audit import AuditLog
    from charter.runtime.policy.approval import ApprovalAnswer, ApprovalProvider
    from charter.runtime.policy.session import Session
    from charter.runtime.tools.base import ToolRuntime
    from charter.runtime.tools.executables import Executables
    from charter.runtime.tools.registry import Registry

__all__ = ["GATES", "decide", "execute"]

# Every gate, in the order a call meets them; a refusal names one of these.
GATES = (
    visibility.GATE,
    schema.GATE,
    capability.GATE,
    permission.GATE,
    confinement.GATE,
    shell.GATE,
    url.GATE,
    dataflow.GATE,
    approval.GATE,
    dispatch.GATE,
)


def decide(session: Session, call: ToolCall) -> Outcome:
    """Every gate's answer for ``call`` short of asking anyone or running it."""
    entry = visibility.check(session, call)
    if isinstance(entry, Outcome):
        return entry
    refused = schema.check(session, call, entry.name)
    if refused is not None:
        return refused
    secrets = capability.check(session, call, entry)
    if isinstance(secrets, Outcome):
        return secrets
    # From here each gate may only make the outcome stricter (the shell
    # guard replaces it with its own, which is at least as strict).
    out = permission.check(session, call, entry)
    if out.decision == "deny":
        return out
    out = confinement.check(session, call, out)
    if out.decision == "deny":
        return out
    out = shell.check(session, call, out, secrets)
    if out.decision == "deny":
        return out
    out = url.check(session, call, out)
    if out.decision == "deny":
        return out
    return dataflow.check(session, call, out)


def execute(
    session: Session,
    call: ToolCall,
    registry: Registry | None,
    provider: ApprovalProvider,
    audit: AuditLog | None = None,
    *,
    runtime: ToolRuntime,
) -> ToolResult:
    """Run ``call`` through every gate and, when all pass, its implementation
    (``registry`` by the plan's ``impl`` key; the package's own
    ``IMPLEMENTATIONS`` when None). ``runtime`` is what the implementation
    receives; its redactor also redacts the events and what a person is
    shown. Never raises for anything the call contains."""
    redactor = runtime.redactor

    def redact(text: str) -> str:
        return redactor.redact(text, "event")

    def show(text: str) -> str:  # what the person asked for approval sees
        return redactor.redact(text, "operator")

    t0 = time.perf_counter()
    out = decide(session, call)
    decide_us = round((time.perf_counter() - t0) * 1e6)
    timings: dict[str, int] = {"decide_us": decide_us}
    # The executables of a shell call, resolved at most once and only when a
    # person is asked or an event is written (a few stat calls the decision
    # itself never pays).
    resolved: list[Executables] = []

    def executables() -> Executables | None:
        if out.shell is None:  # not a shell call the guard looked at
            return None
        if not resolved:
            resolved.append(records.call_executables(session, call, out, runtime))
        return resolved[0]

    def audited() -> dict[str, object]:
        if audit is None:
            return {}
        exes = executables()
        return {} if exes is None else {"executables": exes.as_dict()}

    if out.decision == "deny":
        records.audit(audit, "decision", session, call, out, redact, timings=timings, **audited())
        return out.refusal()
    if isinstance(call.args, dict):
        redactor.discover_value(call.args)

    def ask_person(
        gate: str, *, reason: str, rule: str, cache_key: str | None, liftable_by: str
    ) -> tuple[ApprovalAnswer, ToolResult | None]:
        """Ask for approval at ``gate`` and time it under ``<gate>_ms``; a
        refusal is audited here and comes back as the call's result."""
        t1 = time.perf_counter()
        ans = approval.ask(
            session,
            out,
            call,
            provider,
            reason=reason,
            rule=rule,
            cache_key=cache_key,
            liftable_by=liftable_by,
            redact=show,
            executables=executables,
        )
        timings[f"{gate}_ms"] = round((time.perf_counter() - t1) * 1000)
        if ans.approved:
            return ans, None
        denied = approval.refused_by_person(out, ans, gate)
        records.audit(
            audit,
            "decision",
            session,
            call,
            denied,
            redact,
            timings=timings,
            approved_by=ans.source,
            **audited(),
        )
        return ans, denied.refusal()

    approved_by = "policy"
    if out.needs_approval:
        ans, refused = ask_person(
            approval.GATE,
            reason=out.reason,
            rule=out.rule,
            cache_key=out.cache_key,
            liftable_by=out.liftable_by,
        )
        if refused is not None:
            return refused
        approved_by = f"{ans.source}:{ans.kind}"
    if out.dataflow is not None and out.dataflow.decision == "ask":
        ans, refused = ask_person(
            dataflow.GATE,
            reason=out.dataflow.reason,
            rule=out.dataflow.rule,
            cache_key=None,  # labels change as the run goes on: never remembered
            liftable_by="",
        )
        if refused is not None:
            return refused
        approved_by += f"+dataflow:{ans.source}"
    allowed = dataclasses.replace(out, decision="allow")
    records.audit(
        audit,
        "decision",
        session,
        call,
        allowed,
        redact,
        timings=timings,
        approved_by=approved_by,
        **audited(),
    )

    t2 = time.perf_counter()
    result = dispatch.run(session, call, out, registry, runtime, approved=out.needs_approval)
    timings["run_ms"] = round((time.perf_counter() - t2) * 1000)
    entry = out.entry
    if result.executed and session.taint is not None:
        session.taint.observe(
            entry,
            out.canonical or call.tool,
            call_id=call.call_id,
            sensitive_paths=[
                p.path for p in out.paths if p.result.decision == "ask" and p.op == "read"
            ],
            secret_targets=out.secret_targets,
        )
    work = bool(entry is not None and entry.counts_as_work and result.ok)
    ran: dict[str, object] = {}
    planned = executables() if audit is not None else None
    if planned is not None:
        ran = {"executables": records.ran_executables(result, planned)}
    result = dataclasses.replace(result, data={**result.data, "counts_as_work": work})
    records.audit(
        audit,
        "execution",
        session,
        call,
        allowed,
        redact,
        status=result.status,
        timings=timings,
        counts_as_work=work,
        **ran,
        # A script tool's host function calls, each with its outcome: the
        # children of this call (redacted like every other audited text).
        **(
            {"host_calls": [{k: redact(str(v)) for k, v in c.items()} for c in host_calls]}
            if isinstance(host_calls := result.data.get("host_calls"), list)
            else {}
        ),
    )
    return result
