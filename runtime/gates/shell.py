"""Gate 6, shell: the shell guard's verdict on a command, met with the
tool's permission (tools whose plan entry says ``guard: shell``).

The command is judged in its working directory, which the confinement gate
already confined. An explicit environment overlay is name-checked (loader
and interpreter variables are refused) and, like a bound secret, always
needs a person. The guard's verdict meets the plan's decision through
:func:`charter.runtime.shell.combine`: every file the command writes answers
to write_file's decision in the stage, or to the stage's ``redirect_write``
when the session does not offer write_file; a write outside the workspace
is a deny; a launch flag lifts what remains an ask unless the tool's own ask
is unliftable or the guard's ask is one only a person answers. This outcome
replaces the permission gate's: it is the whole decision for the call.
"""

from __future__ import annotations

from typing import Any

from charter.runtime.gates.outcome import Outcome, PathCheck, deny
from charter.runtime.plan import Permission
from charter.runtime.policy.session import Session
from charter.runtime.policy.workspace import confine
from charter.runtime.results import ToolCall

__all__ = ["GATE", "check"]

GATE = "shell"


def check(session: Session, call: ToolCall, out: Outcome, secrets: tuple[str, ...]) -> Outcome:
    entry = out.entry
    if entry is None or entry.guard != "shell":
        return out
    from charter.runtime.shell import combine, evaluate, fingerprint

    name = entry.name
    decision = session.stage.decisions[name]  # the permission gate found it
    args = call.args
    prov = dict(out.provenance)
    paths = out.paths
    cwd_check = next((p.result for p in paths if p.arg == "cwd"), None)
    if cwd_check is None:
        # A plan that lists no cwd for a shell tool: the command still runs
        # somewhere, so it is confined here all the same.
        cwd_text = str(args.get("cwd", "."))
        cwd_check = confine(session.workspace, cwd_text, op="read")
        paths = (*paths, PathCheck("cwd", "read", cwd_text, cwd_check))
    cwd = cwd_check.resolved
    if cwd_check.decision == "deny" or cwd is None:
        # Refused, or nothing could be resolved: there is nowhere to run it.
        return deny(
            call,
            "confinement",
            cwd_check.rule,
            f"the working directory is refused: {cwd_check.message}; no flag lifts this",
            canonical=name,
            entry=entry,
            provenance=prov,
            paths=paths,
        )
    env = args.get("env") or {}
    if env:
        from charter.runtime.policy.env import validate_overlay

        problems = validate_overlay(env)
        if problems:
            return deny(
                call,
                GATE,
                "env-overlay-refused",
                "the environment overlay is refused: " + "; ".join(problems),
                canonical=name,
                entry=entry,
                provenance=prov,
                paths=paths,
            )
    command = str(args.get("command", ""))
    verdict = evaluate(
        command, cwd=cwd, workspace=session.workspace, policy=session.agent.agent.shell
    )
    if session.contained:
        from charter.runtime.sandbox.contained import allow_contained

        # Asks the run's sandbox answers (never in charter check or a hook).
        verdict = allow_contained(verdict, session.contained)
    write_perm = _write_permission(session, prov)
    # A flag lifts what remains an ask unless the plan made the tool's own ask
    # unliftable; a tool allowed outright leaves only the guard's ask to lift.
    lifted = (decision.liftable or decision.permission == "allow") and session.lifted(name)
    final, why = combine(decision.permission, verdict, write_perm, lifted_by_flag=lifted)
    timeout = args.get("timeout_seconds", session.agent.agent.limits.shell_timeout_secs)
    fp = fingerprint(
        command,
        str(cwd),
        {str(k): str(v) for k, v in env.items()},
        background=bool(args.get("background", False)),
        timeout_s=int(timeout),
    )
    prov["shell_guard"] = {"decision": verdict.decision, "rule": verdict.rule}
    cache_key = None if (verdict.ungrantable or secrets) else f"shell:{name}:{fp}"
    # What every outcome of this gate carries, whatever it decides.
    judged: dict[str, Any] = {
        "canonical": name,
        "entry": entry,
        "provenance": prov,
        "fingerprint": fp,
        "paths": paths,
        "shell": verdict,
    }
    if final == "deny":
        guard_denied = verdict.decision == "deny"
        return deny(
            call,
            GATE,
            verdict.rule if guard_denied else "shell-deny",
            f"{why}: {verdict.message}" if guard_denied else why,
            **judged,
        )
    rule = "launch-flag" if (lifted and final == "allow" and "flag" in why) else verdict.rule
    if final == "allow" and (env or secrets):
        # An explicit overlay or a bound secret always needs a person: the
        # command may behave differently with them, and the guard cannot see how.
        final, rule = "ask", "env-overlay-needs-approval"
        why = "the call sets environment variables or binds secrets, which a person must approve"
    # A guard ask only a person can answer (a credential path, a write under
    # .git/, a target only known at run time) is no flag's to lift.
    can_lift = (decision.liftable or decision.permission == "allow") and (
        verdict.person_only is None
    )
    liftable = "" if (env or secrets) else ("--allow " + name if can_lift else "")
    return Outcome(
        final,
        "approval" if final == "ask" else GATE,
        rule,
        why if final != "ask" else f"{why}: {verdict.message}",
        call.tool,
        cache_key=cache_key,
        liftable_by=liftable if final == "ask" else "",
        needs_approval=final == "ask",
        secret_targets=secrets,
        **judged,
    )


def _write_permission(session: Session, prov: dict[str, Any]) -> Permission:
    """What the files the command writes answer to, as the plan pins it."""
    stage = session.stage
    write_decision = stage.decisions.get("write_file")
    if write_decision is not None and "write_file" in session.offered():
        prov["write_file"] = write_decision.permission
        return write_decision.permission
    # The stage does not offer write_file: the plan's stand-in for it.
    fallback = stage.stage.redirect_write
    prov["write_file"] = f"{fallback} (built-in default; the stage does not offer write_file)"
    return fallback
