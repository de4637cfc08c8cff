"""Gate 4, permission: the plan's decision for the tool in this stage.

``deny`` is final: no launch flag lifts it. ``ask`` becomes ``allow`` under
``--allow TOOL`` or ``--yolo`` when the decision is liftable; otherwise it
waits for a person at the approval gate. The outcome carries the decision's
provenance (scopes, clamps, the session's flags) for every later gate, which
may only make it stricter (the shell guard meets it with its own verdict).
"""

from __future__ import annotations

from typing import Any

from charter.runtime.gates.outcome import Outcome, deny
from charter.runtime.plan import Decision, ToolEntry
from charter.runtime.policy.approval import call_key
from charter.runtime.policy.session import Session
from charter.runtime.results import ToolCall

__all__ = ["GATE", "check", "provenance"]

GATE = "permission"


def check(session: Session, call: ToolCall, entry: ToolEntry) -> Outcome:
    name = entry.name
    decision = session.stage.decisions.get(name)
    if decision is None:
        return deny(
            call,
            GATE,
            "no-decision",
            f"the plan holds no permission for '{name}' in stage '{session.stage_name}'",
            canonical=name,
            entry=entry,
        )
    prov = provenance(decision, session, name)
    if decision.permission == "deny":
        return deny(
            call,
            GATE,
            "plan-deny",
            f"'{name}' is denied in stage '{session.stage_name}' ({decision.explain()}); "
            "no launch flag lifts a deny",
            canonical=name,
            entry=entry,
            provenance=prov,
        )
    if decision.permission == "ask":
        if decision.liftable and session.lifted(name):
            flag = "--yolo" if session.yolo else f"--allow {name}"
            return Outcome(
                "allow",
                GATE,
                "launch-flag",
                f"'{name}' asks ({decision.explain()}); {flag} lifts the ask",
                call.tool,
                canonical=name,
                entry=entry,
                provenance=prov,
            )
        why = f"'{name}' needs approval in stage '{session.stage_name}' ({decision.explain()})"
        if not decision.liftable:
            why += "; a launch flag cannot lift it"
        return Outcome(
            "ask",
            "approval",
            "plan-ask",
            why,
            call.tool,
            canonical=name,
            entry=entry,
            provenance=prov,
            cache_key=call_key(name, call.args),
            liftable_by=f"--allow {name}" if decision.liftable else "",
            needs_approval=True,
        )
    return Outcome(
        "allow",
        GATE,
        "plan-allow",
        f"'{name}' is allowed in stage '{session.stage_name}' ({decision.explain()})",
        call.tool,
        canonical=name,
        entry=entry,
        provenance=prov,
    )


def provenance(decision: Decision, session: Session, name: str) -> dict[str, Any]:
    """The explanation of the plan's decision, with the session's flags. The
    part that comes from the plan is built once per stage and tool."""
    cache = session.agent.provenance_cache
    key = (session.stage_name, name)
    static = cache.get(key)
    if static is None:
        static = cache[key] = _static_provenance(decision, session, name)
    out = dict(static)
    out["flags"] = {
        "yolo": session.yolo,
        "allow": sorted(session.allow),
        "unattended": session.unattended,
    }
    return out


def _static_provenance(decision: Decision, session: Session, name: str) -> dict[str, Any]:
    return {
        "permission": decision.permission,
        "liftable": decision.liftable,
        "explain": decision.explain(),
        "scopes": [
            {
                "scope": s.scope,
                "value": s.value,
                "source": str(s.source) if s.source is not None else None,
                "detail": s.detail or None,
            }
            for s in decision.scopes
        ],
        "clamps": [
            {"rule": c.rule, "before": c.before, "after": c.after, "reason": c.reason}
            for c in decision.clamps
        ],
        "stage": session.stage_name,
        "agent": session.agent.agent.name,
    }
