"""What the gates say about one call: :class:`Outcome`, and the path checks
it carries."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from charter.runtime.plan import Permission, ToolEntry
from charter.runtime.policy.workspace import PathVerdict
from charter.runtime.results import Status, ToolCall, ToolResult, refusal

if TYPE_CHECKING:
    from charter.runtime.policy.taint import TaintVerdict
    from charter.runtime.shell import Verdict

__all__ = ["Outcome", "PathCheck", "deny"]


# PathCheck is a NamedTuple: it is defined at every start-up, and a NamedTuple
# costs about a tenth of a frozen dataclass to define. Outcome stays a
# dataclass: ``provenance`` needs a fresh dict per outcome (default_factory).
class PathCheck(NamedTuple):
    """A path argument of a call and what the workspace check decided about it."""

    arg: str
    op: Literal["read", "write"]
    path: str
    result: PathVerdict


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the gates say about one call.

    ``gate`` is the gate that settled the outcome: for a deny the one that
    refused, for an ask the one that wants a person (``approval`` or
    ``dataflow``), for an allow the last gate that had a say.
    """

    decision: Permission
    gate: str
    rule: str
    reason: str
    tool: str  # the name the model used
    canonical: str | None = None  # the plan's name, once visibility resolved it
    status: Status | None = None  # the refusal status, for a deny
    provenance: Mapping[str, Any] = field(default_factory=dict)
    fingerprint: str | None = None
    cache_key: str | None = None  # None: an approval cannot be remembered
    liftable_by: str = ""  # the launch flag that would lift this ask
    paths: tuple[PathCheck, ...] = ()
    shell: Verdict | None = None
    dataflow: TaintVerdict | None = None
    # The permission-level ask still needs a person (the dataflow ask is separate).
    needs_approval: bool = False
    secret_targets: tuple[str, ...] = ()
    entry: ToolEntry | None = None

    def refusal(self) -> ToolResult:
        return refusal(self.status or "denied", self.gate, self.rule, self.reason)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "decision": self.decision,
            "gate": self.gate,
            "rule": self.rule,
            "reason": self.reason,
            "tool": self.tool,
            "resolved_tool": self.canonical,
            "provenance": dict(self.provenance),
        }
        if self.fingerprint is not None:
            out["fingerprint"] = self.fingerprint
        if self.paths:
            out["paths"] = [
                {
                    "arg": p.arg,
                    "op": p.op,
                    "decision": p.result.decision,
                    "rule": p.result.rule,
                    "message": p.result.message,
                }
                for p in self.paths
            ]
        if self.shell is not None:
            out["shell_guard"] = {
                "decision": self.shell.decision,
                "rule": self.shell.rule,
                "message": self.shell.message,
                "ungrantable": self.shell.ungrantable,
            }
        if self.dataflow is not None:
            out["dataflow"] = {
                "decision": self.dataflow.decision,
                "rule": self.dataflow.rule,
                "targets": list(self.dataflow.targets),
                "labels": [str(lb) for lb in self.dataflow.labels],
            }
        return out


def deny(
    call: ToolCall,
    gate: str,
    rule: str,
    reason: str,
    status: Status = "denied",
    **kw: Any,
) -> Outcome:
    """A refusal by ``gate``, for the name the model used."""
    return Outcome("deny", gate, rule, reason, call.tool, status=status, **kw)
