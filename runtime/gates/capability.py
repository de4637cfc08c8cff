"""Gate 3, capability: is the agent granted what the call needs?

An agent that declares grants (one with an agent.yaml core) must hold the
tool's capability, and a delegating tool (``guard: delegate``) needs
``agents.spawn:<the child's core>`` from the core's own grants. A secret
binding of a shell command needs its exact ``secret.bind:NAME`` grant
whatever the agent's kind; the names it binds are what this gate passes on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from charter.runtime.gates.outcome import Outcome, deny
from charter.runtime.plan import ToolEntry
from charter.runtime.plan.prepared import usable_grants
from charter.runtime.policy.capabilities import is_granted, spawn_capability
from charter.runtime.policy.session import Session
from charter.runtime.results import ToolCall

__all__ = ["GATE", "check"]

GATE = "capability"


def check(session: Session, call: ToolCall, entry: ToolEntry) -> Outcome | tuple[str, ...]:
    """The environment variables the call binds secrets to, or the refusal."""
    agent = session.agent
    name = entry.name
    grants = usable_grants(agent, entry)
    if agent.checks_capabilities and entry.capability is not None:
        if not is_granted(entry.capability, grants):
            return deny(
                call,
                GATE,
                "capability-not-granted",
                f"'{name}' needs the capability '{entry.capability}', which this agent is "
                "not granted (grant it under capabilities in agent.yaml)",
                canonical=name,
            )
    if agent.checks_capabilities and entry.guard == "delegate":
        # The tool itself has no registry capability; starting a child needs
        # agents.spawn:<the child's core>, as the agent host's handler checks.
        needed = spawn_capability(call.args, agent.agent.name)
        if not is_granted(needed, agent.grants):
            return deny(
                call,
                GATE,
                "capability-not-granted",
                f"'{name}' needs the capability '{needed}' to start that core, which this "
                "agent is not granted (grant it under capabilities.defaults in agent.yaml)",
                canonical=name,
            )
    if entry.guard != "shell":
        return ()
    bindings = _bindings(call.args)
    if not bindings:
        return ()
    from charter.runtime.policy.env import validate_bindings

    problems = validate_bindings(bindings, grants)
    if call.args.get("background"):
        problems.append("secret bindings are for foreground commands only")
    if problems:
        return deny(
            call,
            GATE,
            "secret-binding-refused",
            "the secret bindings cannot be honoured: " + "; ".join(problems),
            canonical=name,
        )
    return tuple(b.target_name or "" for b in bindings)


def _bindings(args: Mapping[str, Any]) -> list[Any]:
    raw = args.get("secret_bindings") or []
    if not raw:
        return []
    from charter.runtime.policy.env import SecretBinding

    return [
        SecretBinding(
            source=str(b.get("source", "")),
            target=b.get("target"),
            expires_in_seconds=b.get("expires_in_seconds"),
        )
        for b in raw
        if isinstance(b, dict)
    ]
