"""Gate 2, schema: do the arguments fit the schema the plan advertised?

:func:`charter.runtime.policy.arguments.check_arguments` is the one argument check;
this gate turns its answer into a refusal. Each violation names its JSON
path; three are shown, then "and N more".
"""

from __future__ import annotations

from charter.runtime.gates.outcome import Outcome, deny
from charter.runtime.policy.arguments import check_arguments
from charter.runtime.policy.session import Session
from charter.runtime.results import ToolCall

__all__ = ["GATE", "check"]

GATE = "schema"


def check(session: Session, call: ToolCall, name: str) -> Outcome | None:
    """None when the arguments may go on; otherwise the refusal."""
    refused = check_arguments(name, call.args, session.agent.checks.get(name))
    if refused is None:
        return None
    return deny(call, GATE, refused.rule, refused.reason, refused.status, canonical=name)
