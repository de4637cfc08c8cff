"""Gate 8, dataflow: with data-flow tracking on, may this call carry what
the session has read to where it is going?

An outbound call after a sensitive read must match the agent's allowlist on
its actual target; otherwise the policy's ``on_block`` decides: a deny
(status ``blocked``) or an ask that a person answers at the approval gate,
after the permission's own ask. ``--yolo`` does not waive it.
"""

from __future__ import annotations

import dataclasses

from charter.runtime.gates.outcome import Outcome
from charter.runtime.results import ToolCall
from charter.runtime.session import Session

__all__ = ["GATE", "check"]

GATE = "dataflow"


def check(session: Session, call: ToolCall, out: Outcome) -> Outcome:
    tracker = session.taint
    if tracker is None:
        return out
    from charter.runtime.taint import outbound_targets

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
    if verdict.decision == "deny":
        return dataclasses.replace(
            out,
            decision="deny",
            gate=GATE,
            rule=verdict.rule,
            reason=verdict.reason,
            status="blocked",
            provenance=prov,
            dataflow=verdict,
        )
    if verdict.decision == "ask" and out.decision == "allow":
        return dataclasses.replace(
            out,
            decision="ask",
            gate=GATE,
            rule=verdict.rule,
            reason=verdict.reason,
            provenance=prov,
            dataflow=verdict,
            liftable_by="",
        )
    return dataclasses.replace(out, provenance=prov, dataflow=verdict)
