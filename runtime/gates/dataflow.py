"""Gate 8, dataflow: with data-flow tracking on, may this call carry what
the session has read to where it is going?

An outbound call after a sensitive read must match the agent's allowlist on
its actual target; otherwise the policy's ``on_block`` decides: a deny
(status ``blocked``) or an ask that a person answers at the approval gate,
after the permission's own ask. ``--yolo`` does not waive it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from charter.runtime.gates.outcome import Outcome
from charter.runtime.policy.session import Session
from charter.runtime.results import ToolCall

__all__ = ["GATE", "check"]

GATE = "dataflow"


def check(session: Session, call: ToolCall, out: Outcome) -> Outcome:
    tracker = session.taint
    if tracker is None:
        return out
    from charter.runtime.policy.taint import outbound_targets

    guard_allowed = out.shell is not None and out.shell.decision == "allow"
    targets = outbound_targets(
        out.entry, call.args, workspace=session.workspace, guard_allowed=guard_allowed
    )
    verdict = tracker.check(out.canonical or call.tool, targets)
    prov = dict(out.provenance)
    prov["dataflow"] = {
        "decision": verdict.decision,
        "rule": verdict.rule,
        "targets": list(verdict.targets),
        "labels": [str(lb) for lb in verdict.labels],
    }
    changes: dict[str, Any] = {}
    if verdict.decision == "deny":
        changes = {"decision": "deny", "status": "blocked"}
    elif verdict.decision == "ask" and out.decision == "allow":
        # Asked at the approval gate after the permission's own ask; no
        # launch flag waives it.
        changes = {"decision": "ask", "liftable_by": ""}
    if changes:
        changes.update(gate=GATE, rule=verdict.rule, reason=verdict.reason)
    return dataclasses.replace(out, provenance=prov, dataflow=verdict, **changes)
