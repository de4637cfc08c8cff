"""What a tool call produces, whether it ran or was refused.

Refusals are results, not exceptions: the model reads them and corrects
itself. Each refusal names the gate that stopped the call (one of
``charter.runtime.gates.GATES``). ``counts_as_work``
is what edge gates look at: a refused, failed or malformed call never counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

__all__ = ["Status", "ToolCall", "ToolResult", "refusal"]

# What became of one tool call: it ran (ok, error, timeout) or a gate or the
# tool refused it (denied, unavailable, invalid, blocked).
Status = Literal["ok", "error", "denied", "unavailable", "invalid", "blocked", "timeout"]


# ToolCall is a NamedTuple: it is defined at every start-up, and a NamedTuple
# costs about a tenth of a frozen dataclass to define. ToolResult stays a
# dataclass: ``data`` needs a fresh dict per result (default_factory).
class ToolCall(NamedTuple):
    tool: str  # the name the model used (may be an alias)
    args: dict[str, Any]
    call_id: str = ""


@dataclass(frozen=True, slots=True)
class ToolResult:
    status: Status
    content: str  # what the model sees (already redacted)
    gate: str | None = None  # the gate that refused, for refusals
    rule: str | None = None  # a stable rule key for the reason
    display: str | None = None  # what an operator sees, when it differs
    data: dict[str, Any] = field(default_factory=dict)  # structured extras (exit code, sizes)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def executed(self) -> bool:
        return self.status in ("ok", "error", "timeout")


_PREFIX = {
    "denied": "[denied]",
    "unavailable": "[unavailable]",
    "invalid": "[error]",
    "blocked": "[blocked]",
    "error": "[error]",
    "timeout": "[timed out]",
}


def refusal(status: Status, gate: str, rule: str, message: str, **data: Any) -> ToolResult:
    """A result for a call stopped at ``gate``; the text starts with a
    marker the model (and edge gates) recognise as "nothing happened"."""
    prefix = _PREFIX.get(status, "[error]")
    return ToolResult(status, f"{prefix} {message}", gate=gate, rule=rule, data=dict(data))
