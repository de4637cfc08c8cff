"""Gate 5, confinement: the path arguments the plan lists for the tool
(``path_args``) are confined to the workspace before anything asks anybody.

Outside the workspace (a traversal, an escaping symlink, ``~``, a NUL or
encoded form, Charter's own ``.charter/`` records for a write) is a deny no
flag lifts: confinement is not a permission. A credential path inside, or a
write under ``.git/``, asks, and only a person can answer that. See
:func:`charter.runtime.policy.workspace.confine`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from charter.runtime.gates.outcome import Outcome, PathCheck, deny
from charter.runtime.plan import ToolEntry
from charter.runtime.policy.approval import call_key
from charter.runtime.policy.session import Session
from charter.runtime.policy.workspace import confine
from charter.runtime.results import ToolCall
from charter.runtime.tools.paths import path_args

__all__ = ["GATE", "check", "path_checks"]

GATE = "confinement"


def path_checks(
    workspace: Path, entry: ToolEntry, args: Mapping[str, Any]
) -> tuple[PathCheck, ...]:
    """Every path the call would touch, with the workspace's verdict on it."""
    return tuple(
        PathCheck(arg, op, value, confine(workspace, value, op=op))
        for arg, value, op in path_args(entry, args)
    )


def check(session: Session, call: ToolCall, out: Outcome) -> Outcome:
    entry = out.entry
    if entry is None or not entry.path_args:
        return out
    paths = path_checks(session.workspace, entry, call.args)
    for p in paths:
        if p.result.decision == "deny":
            return deny(
                call,
                GATE,
                p.result.rule,
                f"{p.result.message}; workspace confinement is not a permission, "
                "and no flag lifts it",
                canonical=out.canonical,
                entry=entry,
                provenance=out.provenance,
                paths=paths,
            )
    sensitive = [p for p in paths if p.result.decision == "ask"]
    if sensitive:
        first = sensitive[0].result
        return Outcome(
            "ask",
            "approval",
            first.rule,
            f"{first.message}; only a person can approve this (launch flags do not)",
            call.tool,
            canonical=out.canonical,
            entry=entry,
            provenance=out.provenance,
            cache_key=call_key(entry.name, call.args),
            paths=paths,
            needs_approval=True,
        )
    return replace(out, paths=paths)
