"""The gate pipeline: every tool call passes the same gates, in the same order.

1. **visibility**: does the stage offer the tool (attended or unattended
   set; an alias such as ``bash`` resolves to ``shell`` through the catalog)?
2. **schema**: do the arguments fit the schema the plan advertised? Each
   violation names its JSON path; three are shown, then "and N more".
3. **capability**: for an agent that declares grants (one with an agent.yaml
   core), is the tool's capability covered? Secret bindings need their exact
   ``secret.bind:NAME`` grant whatever the agent's kind.
4. **permission**: the plan's decision for the tool in this stage. For the
   shell the guard's verdict is combined with it (``charter.runtime.shell.
   combine``), every file the command writes answering to write_file's
   decision. Path arguments are confined to the workspace here: outside is a
   deny no flag lifts (for the shell: every write or delete outside, however
   its target is named); a credential path inside asks, and only a person
   can answer that, as for a shell command that reads one, writes under
   .git/ or writes a target only known at run time. ``--allow TOOL`` and
   ``--yolo`` lift a liftable ask, never a deny.
5. **approval**: a remaining ask goes to the approval provider (or is
   answered from the run's approval cache).
6. **dataflow**: with data-flow tracking on, an outbound call after a
   sensitive read must match the allowlist on its actual target.
7. **dispatch**: the built-in implementation runs (an MCP tool's call goes to
   its server, see ``charter.runtime.mcp.session``).

:func:`decide` runs gates 1-4 and 6 without side effects and reports what
would happen (``charter check`` and the Claude Code hook use it);
:func:`execute` also asks, runs the tool and writes the audit log. A refused
or malformed call never reaches the approval provider and never counts as
work.

For a shell call the approval request and the audit events also name the
resolved shell and, best effort, the command's own executable
(``charter.runtime.tools.executables``). They are resolved only when a person
is asked or an event is written, at most once per call, so :func:`decide`
stays free of file-system look-ups.
"""

from __future__ import annotations

import dataclasses
import re
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from charter.runtime.approval import (
    ApprovalAnswer,
    ApprovalProvider,
    ApprovalRequest,
    call_key,
)
from charter.runtime.capabilities import DELEGATE_TOOL, is_granted, spawn_capability
from charter.runtime.catalog import default_permission
from charter.runtime.plan import Decision, ToolEntry
from charter.runtime.results import Status, ToolCall, ToolResult, refusal
from charter.runtime.session import SHELL_IMPLS, Session, usable_grants
from charter.runtime.tools.paths import path_args
from charter.runtime.workspace import PathDecision, confine

if TYPE_CHECKING:
    from charter.runtime.audit import AuditLog
    from charter.runtime.shell import Verdict
    from charter.runtime.taint import TaintVerdict
    from charter.runtime.tools.executables import Executables

__all__ = ["Outcome", "PathCheck", "decide", "execute"]

Permission = Literal["allow", "ask", "deny"]
_MAX_VIOLATIONS = 3
# UTF-16 surrogate code points: JSON's "\ud800" escape yields one alone,
# which is no Unicode text (it cannot be encoded, logged or written).
_SURROGATE = re.compile("[\ud800-\udfff]")
_MAX_VIOLATION_TEXT = 256
_PREVIEW = 600
_PREVIEW_TEXT = 4000  # each text argument an approval prompt shows as text


@dataclass(frozen=True, slots=True)
class PathCheck:
    """A path argument of a call and what the workspace check decided about it."""

    arg: str
    op: Literal["read", "write"]
    path: str
    result: PathDecision


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


def _deny(
    call: ToolCall,
    gate: str,
    rule: str,
    reason: str,
    status: Status = "denied",
    **kw: Any,
) -> Outcome:
    return Outcome("deny", gate, rule, reason, call.tool, status=status, **kw)


# -- 1. visibility ------------------------------------------------------------


def _visibility(session: Session, call: ToolCall) -> Outcome | str:
    stage = session.stage
    offered = session.offered()
    name = session.agent.resolve_name(call.tool, offered)
    if name is not None:
        return name
    listed = ", ".join(sorted(offered)) or "nothing"
    gone = session.agent.unavailable.get(call.tool)
    if gone is not None:  # an MCP tool the connected servers do not offer now
        return _deny(
            call,
            "visibility",
            "mcp-tool-unavailable",
            f"'{call.tool}' is not available: {gone}. You may call: {listed}",
            "unavailable",
        )
    where = f"stage '{stage.stage.name}'"
    if session.unattended and session.agent.resolve_name(call.tool, stage.attended) is not None:
        rule, why = "not-offered-unattended", f"is not offered in {where} when nobody is watching"
    elif session.agent.resolve_name(call.tool, frozenset(session.agent.tools)) is not None:
        rule, why = "not-offered-in-stage", f"is not offered in {where}"
    else:
        rule, why = "unknown-tool", "is not a tool of this agent"
    return _deny(
        call, "visibility", rule, f"'{call.tool}' {why}. You may call: {listed}", "unavailable"
    )


# -- 2. schema ----------------------------------------------------------------


def _lone_surrogate(args: Mapping[str, Any]) -> str | None:
    """The JSON path of the first key or string holding a surrogate code
    point, or None. Iterative, and linear in the size of the arguments."""
    todo: list[tuple[str, Any]] = [("$", args)]
    while todo:
        path, value = todo.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return path
        elif isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str) and _SURROGATE.search(key):
                    return f"{path} (a key)"
                todo.append((f"{path}.{key}", item))
        elif isinstance(value, list | tuple):
            todo.extend((f"{path}[{n}]", item) for n, item in enumerate(value))
    return None


def _schema(session: Session, call: ToolCall, name: str) -> Outcome | None:
    if not isinstance(call.args, dict):
        return _deny(
            call,
            "schema",
            "arguments-not-object",
            f"invalid arguments for '{name}': the arguments must be a JSON object",
            "invalid",
            canonical=name,
        )
    where = _lone_surrogate(call.args)
    if where is not None:
        return _deny(
            call,
            "schema",
            "invalid-unicode",
            f"invalid arguments for '{name}': {where} holds a lone UTF-16 surrogate "
            "(such as \\ud800), which is not Unicode text; send text only",
            "invalid",
            canonical=name,
        )
    check = session.agent.checks.get(name)
    if check is not None and check.text is None:
        return None  # validation is off for this tool by the plan's decision
    if check is None or check.unusable:
        why = check.unusable if check is not None else "the plan has no schema entry for it"
        return _deny(
            call,
            "schema",
            "schema-unusable",
            f"'{name}' cannot be called: {why}",
            "unavailable",
            canonical=name,
        )
    if check.fast is not None and check.fast(call.args):
        return None
    validator = check.validator
    if validator is None:  # unusable was checked above; never let a call through
        return _deny(
            call,
            "schema",
            "schema-unusable",
            f"'{name}' has no validator",
            "unavailable",
            canonical=name,
        )
    try:
        errors = list(validator.iter_errors(call.args))
    except Exception as exc:  # e.g. a $ref the closed registry cannot resolve
        return _deny(
            call,
            "schema",
            "schema-unusable",
            f"'{name}' cannot be called: its schema cannot be evaluated ({type(exc).__name__})",
            "unavailable",
            canonical=name,
        )
    if not errors:
        return None
    errors.sort(key=lambda e: (list(map(str, e.absolute_path)), e.message))
    shown = []
    for e in errors[:_MAX_VIOLATIONS]:
        text = f"{e.json_path}: {e.message}"
        if len(text) > _MAX_VIOLATION_TEXT:
            text = text[: _MAX_VIOLATION_TEXT - 3] + "..."
        shown.append(text)
    more = len(errors) - _MAX_VIOLATIONS
    tail = f" (and {more} more)" if more > 0 else ""
    return _deny(
        call,
        "schema",
        "schema-violation",
        f"invalid arguments for '{name}': " + "; ".join(shown) + tail,
        "invalid",
        canonical=name,
    )


# -- 3. capability ------------------------------------------------------------


def _bindings(args: Mapping[str, Any]) -> list[Any]:
    raw = args.get("secret_bindings") or []
    if not raw:
        return []
    from charter.runtime.env import SecretBinding

    return [
        SecretBinding(
            source=str(b.get("source", "")),
            target=b.get("target"),
            expires_in_seconds=b.get("expires_in_seconds"),
        )
        for b in raw
        if isinstance(b, dict)
    ]


def _capability(
    session: Session, call: ToolCall, name: str, entry: ToolEntry
) -> Outcome | tuple[str, ...]:
    agent = session.agent
    grants = usable_grants(agent, entry)
    if agent.checks_capabilities and entry.capability is not None:
        if not is_granted(entry.capability, grants):
            return _deny(
                call,
                "capability",
                "capability-not-granted",
                f"'{name}' needs the capability '{entry.capability}', which this agent is "
                "not granted (grant it under capabilities in agent.yaml)",
                canonical=name,
            )
    if agent.checks_capabilities and entry.name == DELEGATE_TOOL and entry.source == "builtin":
        # The tool itself has no registry capability; starting a child needs
        # agents.spawn:<the child's core>, as the agent host's handler checks.
        needed = spawn_capability(call.args, agent.agent.name)
        if not is_granted(needed, agent.grants):
            return _deny(
                call,
                "capability",
                "capability-not-granted",
                f"'{name}' needs the capability '{needed}' to start that core, which this "
                "agent is not granted (grant it under capabilities.defaults in agent.yaml)",
                canonical=name,
            )
    if entry.impl not in SHELL_IMPLS:
        return ()
    bindings = _bindings(call.args)
    if not bindings:
        return ()
    from charter.runtime.env import validate_bindings

    problems = validate_bindings(bindings, grants)
    if call.args.get("background"):
        problems.append("secret bindings are for foreground commands only")
    if problems:
        return _deny(
            call,
            "capability",
            "secret-binding-refused",
            "the secret bindings cannot be honoured: " + "; ".join(problems),
            canonical=name,
        )
    return tuple(b.target_name or "" for b in bindings)


# -- 4. permission ------------------------------------------------------------


def _provenance(decision: Decision, session: Session, name: str) -> dict[str, Any]:
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


def _path_checks(session: Session, name: str, args: Mapping[str, Any]) -> tuple[PathCheck, ...]:
    return tuple(
        PathCheck("path", op, value, confine(session.workspace, value, op=op))
        for value, op in path_args(name, args)
    )


def _url_refusal(
    session: Session, entry: ToolEntry, args: Mapping[str, Any]
) -> tuple[str, str] | None:
    """The URL policy on the literal URL of a built-in web fetch: a target
    refused by its text alone (a metadata address, a private or loopback
    literal, ``localhost``, another scheme) is refused when the call is
    decided, not only when Charter's own transport connects. An agent behind
    a hook fetches with its own client, which never asks the policy. Names
    that need DNS pass here; Charter's transport still pins every answer."""
    if entry.source != "builtin" or entry.impl != "web.fetch":
        return None
    url = args.get("url")
    if not isinstance(url, str):
        return None  # the schema gate reports it
    from charter.runtime.net.urlpolicy import UrlPolicy, audit_origin

    decision = UrlPolicy(allow_local_network=session.agent.agent.allow_local_network).check(url)
    if decision.verdict != "deny":
        return None
    return f"url-{decision.reason}", f"{audit_origin(decision)} is refused: {decision.detail}"


def _shell_permission(
    session: Session,
    call: ToolCall,
    name: str,
    decision: Decision,
    prov: dict[str, Any],
    secrets: tuple[str, ...],
    entry: ToolEntry,
) -> Outcome:
    from charter.runtime.shell import combine, evaluate, fingerprint

    args = call.args
    command = str(args.get("command", ""))
    cwd_text = str(args.get("cwd", "."))
    cwd_check = confine(session.workspace, cwd_text, op="read")
    paths = (PathCheck("cwd", "read", cwd_text, cwd_check),)
    if cwd_check.decision == "deny" or cwd_check.resolved is None:
        return _deny(
            call,
            "permission",
            cwd_check.rule,
            f"the working directory is refused: {cwd_check.message}; no flag lifts this",
            canonical=name,
            entry=entry,
            provenance=prov,
            paths=paths,
        )
    cwd = cwd_check.resolved
    env = args.get("env") or {}
    if env:
        from charter.runtime.env import validate_overlay

        problems = validate_overlay(env)
        if problems:
            return _deny(
                call,
                "permission",
                "env-overlay-refused",
                "the environment overlay is refused: " + "; ".join(problems),
                canonical=name,
                entry=entry,
                provenance=prov,
                paths=paths,
            )
    verdict = evaluate(
        command, cwd=cwd, workspace=session.workspace, policy=session.agent.agent.shell
    )
    if session.contained:
        from charter.runtime.sandbox.contained import allow_contained

        # Asks the run's sandbox answers (never in charter check or a hook).
        verdict = allow_contained(verdict, session.contained)
    stage = session.stage
    write_decision = stage.decisions.get("write_file")
    if write_decision is not None and "write_file" in session.offered():
        write_perm: Permission = write_decision.permission
        prov["write_file"] = write_perm
    else:
        # The stage does not offer write_file: the catalog default stands in.
        write_perm = default_permission("write_file")
        prov["write_file"] = f"{write_perm} (built-in default; the stage does not offer write_file)"
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
    if final == "deny":
        return _deny(
            call,
            "permission",
            verdict.rule if verdict.decision == "deny" else "shell-deny",
            f"{why}: {verdict.message}" if verdict.decision == "deny" else why,
            canonical=name,
            entry=entry,
            provenance=prov,
            fingerprint=fp,
            paths=paths,
            shell=verdict,
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
        "approval" if final == "ask" else "permission",
        rule,
        why if final != "ask" else f"{why}: {verdict.message}",
        call.tool,
        canonical=name,
        entry=entry,
        provenance=prov,
        fingerprint=fp,
        cache_key=cache_key,
        liftable_by=liftable if final == "ask" else "",
        paths=paths,
        shell=verdict,
        needs_approval=final == "ask",
        secret_targets=secrets,
    )


def _permission(
    session: Session,
    call: ToolCall,
    name: str,
    entry: ToolEntry,
    secrets: tuple[str, ...],
) -> Outcome:
    decision = session.stage.decisions.get(name)
    if decision is None:
        return _deny(
            call,
            "permission",
            "no-decision",
            f"the plan holds no permission for '{name}' in stage '{session.stage_name}'",
            canonical=name,
            entry=entry,
        )
    prov = _provenance(decision, session, name)
    if decision.permission == "deny":
        return _deny(
            call,
            "permission",
            "plan-deny",
            f"'{name}' is denied in stage '{session.stage_name}' ({decision.explain()}); "
            "no launch flag lifts a deny",
            canonical=name,
            entry=entry,
            provenance=prov,
        )
    if entry.impl in SHELL_IMPLS and entry.source == "builtin":
        return _shell_permission(session, call, name, decision, prov, secrets, entry)

    paths = _path_checks(session, name, call.args) if entry.source == "builtin" else ()
    sensitive = [p for p in paths if p.result.decision == "ask"]
    for p in paths:
        if p.result.decision == "deny":
            return _deny(
                call,
                "permission",
                p.result.rule,
                f"{p.result.message}; workspace confinement is not a permission, "
                "and no flag lifts it",
                canonical=name,
                entry=entry,
                provenance=prov,
                paths=paths,
            )
    refused = _url_refusal(session, entry, call.args)
    if refused is not None:
        rule, message = refused
        return _deny(
            call,
            "permission",
            rule,
            f"{message}; the URL policy is not a permission, and no flag lifts it",
            canonical=name,
            entry=entry,
            provenance=prov,
            paths=paths,
        )
    if sensitive:
        first = sensitive[0].result
        return Outcome(
            "ask",
            "approval",
            first.rule,
            f"{first.message}; only a person can approve this (launch flags do not)",
            call.tool,
            canonical=name,
            entry=entry,
            provenance=prov,
            cache_key=call_key(name, call.args),
            paths=paths,
            needs_approval=True,
        )
    if decision.permission == "ask":
        if decision.liftable and session.lifted(name):
            flag = "--yolo" if session.yolo else f"--allow {name}"
            return Outcome(
                "allow",
                "permission",
                "launch-flag",
                f"'{name}' asks ({decision.explain()}); {flag} lifts the ask",
                call.tool,
                canonical=name,
                entry=entry,
                provenance=prov,
                paths=paths,
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
            paths=paths,
            needs_approval=True,
        )
    return Outcome(
        "allow",
        "permission",
        "plan-allow",
        f"'{name}' is allowed in stage '{session.stage_name}' ({decision.explain()})",
        call.tool,
        canonical=name,
        entry=entry,
        provenance=prov,
        paths=paths,
    )


# -- 6. data flow -------------------------------------------------------------


def _dataflow(session: Session, call: ToolCall, entry: ToolEntry, out: Outcome) -> Outcome:
    tracker = session.taint
    if tracker is None:
        return out
    from charter.runtime.taint import outbound_targets

    guard_allowed = out.shell is not None and out.shell.decision == "allow"
    targets = outbound_targets(
        entry, call.args, workspace=session.workspace, guard_allowed=guard_allowed
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
            gate="dataflow",
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
            gate="dataflow",
            rule=verdict.rule,
            reason=verdict.reason,
            provenance=prov,
            dataflow=verdict,
            liftable_by="",
        )
    return dataclasses.replace(out, provenance=prov, dataflow=verdict)


def decide(session: Session, call: ToolCall) -> Outcome:
    """Every gate's answer for ``call`` short of asking anyone or running it."""
    visible = _visibility(session, call)
    if isinstance(visible, Outcome):
        return visible
    name = visible
    entry = session.agent.tools.get(name)
    if entry is None:
        return _deny(
            call,
            "visibility",
            "no-tool-entry",
            f"the plan offers '{name}' but holds no entry for it",
            "unavailable",
            canonical=name,
        )
    bad = _schema(session, call, name)
    if bad is not None:
        return bad
    cap = _capability(session, call, name, entry)
    if isinstance(cap, Outcome):
        return cap
    out = _permission(session, call, name, entry, cap)
    if out.decision == "deny":
        return out
    return _dataflow(session, call, entry, out)


# -- execution ------------------------------------------------------------------


# A built-in implementation: run(call_args, rt, *, tool=..., approved=...).
Impl = Callable[..., ToolResult]


def _preview(args: Mapping[str, Any], redact: Callable[[str], str]) -> str:
    import json

    shown = {k: v for k, v in args.items() if k != "env"}
    if "env" in args and isinstance(args["env"], dict):
        shown["env"] = {k: "<hidden>" for k in args["env"]}
    for key, _text in _long_texts(args):
        shown[key] = "<shown below>"
    text = redact(json.dumps(shown, ensure_ascii=False, sort_keys=True, default=str))
    return text if len(text) <= _PREVIEW else text[:_PREVIEW] + "..."


def _long_texts(args: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Top-level string arguments a person reads better as text than as
    escaped JSON: a file's content, an edit's old and new text."""
    return [
        (k, v)
        for k, v in sorted(args.items())
        if k != "env" and isinstance(v, str) and ("\n" in v or len(v) > _PREVIEW // 4)
    ]


def _texts(args: Mapping[str, Any], redact: Callable[[str], str]) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    for key, value in _long_texts(args):
        text = redact(value)
        if len(text) > _PREVIEW_TEXT:
            text = text[:_PREVIEW_TEXT] + f"\n... [{len(text) - _PREVIEW_TEXT} more characters]"
        out.append((key, text))
    return tuple(out)


def _reasons(out: Outcome, reason: str, redact: Callable[[str], str]) -> tuple[str, ...]:
    """Every reason the call needs approval: for a shell command, each part
    of it the guard asks about (``touch a && pip install b`` has two)."""
    verdict = out.shell
    if verdict is None:
        return ()
    asks = [f for f in verdict.findings if f.decision == "ask"]
    if len(asks) < 2:
        return ()
    seen: list[str] = [redact(reason)]
    for f in asks:
        text = redact(f"{f.message} [{f.rule}]")
        if text not in seen and f.message not in reason:
            seen.append(text)
    return tuple(seen)


def _real_cwd(out: Outcome, call: ToolCall) -> str:
    """The directory a shell command would run in, as the workspace check
    resolved it, rather than the argument as written (``.``)."""
    for check in out.paths:
        if check.arg == "cwd" and check.result.resolved is not None:
            return str(check.result.resolved)
    return str(call.args.get("cwd", "."))


def _ask(
    session: Session,
    out: Outcome,
    call: ToolCall,
    provider: ApprovalProvider,
    *,
    reason: str,
    rule: str,
    cache_key: str | None,
    liftable_by: str,
    redact: Callable[[str], str],
    executables: Callable[[], Executables | None],
) -> ApprovalAnswer:
    if session.approvals is not None:
        hit = session.approvals.lookup(cache_key)
        if hit is not None:
            return ApprovalAnswer(hit, "", "cache")
    command = call.args.get("command") if out.shell is not None else None
    # Resolved only now that a person is really asked (a cache hit is not).
    exes = executables()
    req = ApprovalRequest(
        request_id=call.call_id or uuid.uuid4().hex,
        agent=session.agent.agent.name,
        stage=session.stage_name,
        tool=out.canonical or call.tool,
        args_preview=_preview(call.args, redact),
        reason=redact(reason),
        rule=rule,
        cache_key=cache_key,
        command=redact(str(command)) if command is not None else None,
        cwd=redact(_real_cwd(out, call)) if out.shell is not None else None,
        env_keys=tuple(sorted(call.args.get("env") or {})) if out.shell is not None else (),
        liftable_by=liftable_by,
        shell_executable=_shown(exes.shell, redact) if exes is not None else None,
        command_executable=_shown(exes.command, redact) if exes is not None else None,
        reasons=_reasons(out, reason, redact),
        texts=_texts(call.args, redact),
    )
    try:
        answer = provider.request(req)
    except Exception as exc:  # a broken provider is a denial, never a pass
        return ApprovalAnswer("deny", f"the approval provider failed: {exc}", "error")
    if answer.approved and session.approvals is not None:
        session.approvals.remember(cache_key, answer.kind)
    return answer


def _shown(path: str | None, redact: Callable[[str], str]) -> str | None:
    return redact(path) if path is not None else None


def _call_executables(session: Session, call: ToolCall, out: Outcome, runtime: Any) -> Executables:
    """What the shell call would execute, resolved from the runtime the call
    will run with (its shell, environment and workspace), never raising."""
    from charter.runtime.tools.executables import UNKNOWN, call_executables

    shell = getattr(runtime, "shell", None)
    env = getattr(runtime, "env", None)
    workspace = getattr(runtime, "workspace", None) or session.workspace
    if not isinstance(shell, str) or not isinstance(call.args, dict):
        return UNKNOWN
    return call_executables(
        call.args,
        tool=out.entry.name if out.entry is not None else out.canonical,
        shell=shell,
        env=env if isinstance(env, Mapping) else {},
        workspace=workspace,
    )


def _ran_executables(result: ToolResult, planned: Executables) -> dict[str, str | None]:
    """The executables for the execution event: what the shell tool itself
    resolved when it ran (its result names them), else what was resolved
    before it ran (a refusal or a background start reports none)."""
    data = result.data
    if "shell" in data and "command_executable" in data:
        shell, program = data["shell"], data["command_executable"]
        return {
            "shell": shell if isinstance(shell, str) else None,
            "command": program if isinstance(program, str) else None,
        }
    return planned.as_dict()


def _audit(
    audit: AuditLog | None,
    event: str,
    session: Session,
    call: ToolCall,
    out: Outcome,
    redact: Callable[[str], str],
    **extra: Any,
) -> None:
    if audit is None:
        return
    from charter.runtime.audit import args_digest

    prov = out.provenance
    audit.write(
        event,
        run=session.run_id or None,
        call_id=call.call_id or None,
        agent=session.agent.agent.name,
        stage=session.stage_name,
        tool=out.canonical or call.tool,
        args_digest=args_digest(call.args if isinstance(call.args, dict) else {}, redact),
        gate=out.gate,
        rule=out.rule,
        decision=out.decision,
        reason=out.reason,
        provenance=prov.get("explain") if prov else None,
        fingerprint=out.fingerprint,
        **extra,
    )


def execute(
    session: Session,
    call: ToolCall,
    registry: Mapping[str, Impl] | None,
    provider: ApprovalProvider,
    audit: AuditLog | None = None,
    *,
    runtime: Any,
) -> ToolResult:
    """Run ``call`` through every gate and, when all pass, its built-in
    implementation (``registry`` by the catalog ``impl`` key; the package's
    own ``IMPLEMENTATIONS`` when None). ``runtime`` is the ToolRuntime the
    implementation receives. Never raises for anything the call contains."""
    redactor = getattr(runtime, "redactor", None)

    def redact(text: str) -> str:
        return redactor.redact(text, "event") if redactor is not None else text

    def show(text: str) -> str:  # what the person asked for approval sees
        return redactor.redact(text, "operator") if redactor is not None else text

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
            resolved.append(_call_executables(session, call, out, runtime))
        return resolved[0]

    def audited() -> dict[str, Any]:
        if audit is None:
            return {}
        exes = executables()
        return {} if exes is None else {"executables": exes.as_dict()}

    if out.decision == "deny":
        _audit(audit, "decision", session, call, out, redact, timings=timings, **audited())
        return out.refusal()
    if redactor is not None and isinstance(call.args, dict):
        redactor.discover_value(call.args)

    def ask_person(
        gate: str, *, reason: str, rule: str, cache_key: str | None, liftable_by: str
    ) -> tuple[ApprovalAnswer, ToolResult | None]:
        """Ask for approval at ``gate`` and time it under ``<gate>_ms``; a
        refusal is audited here and comes back as the call's result."""
        t1 = time.perf_counter()
        ans = _ask(
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
        denied = _refused_by_person(out, ans, gate)
        _audit(
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
            "approval",
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
            "dataflow",
            reason=out.dataflow.reason,
            rule=out.dataflow.rule,
            cache_key=None,  # labels change as the run goes on: never remembered
            liftable_by="",
        )
        if refused is not None:
            return refused
        approved_by += f"+dataflow:{ans.source}"
    allowed = dataclasses.replace(out, decision="allow")
    _audit(
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
    result = _dispatch(session, call, out, registry, runtime, approved=out.needs_approval)
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
    ran: dict[str, Any] = {}
    planned = executables() if audit is not None else None
    if planned is not None:
        ran = {"executables": _ran_executables(result, planned)}
    result = dataclasses.replace(result, data={**result.data, "counts_as_work": work})
    _audit(
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
    )
    return result


def _refused_by_person(out: Outcome, ans: ApprovalAnswer, gate: str) -> Outcome:
    if ans.source == "expiry":
        rule = "approval-expired"
    elif ans.source == "flags":
        rule = "approval-unavailable"
    else:
        rule = "approval-denied"
    reason = "the call was not approved"
    if ans.message:
        reason += f": {ans.message}"
    return dataclasses.replace(
        out, decision="deny", gate=gate, rule=rule, reason=reason, status="denied"
    )


def _dispatch(
    session: Session,
    call: ToolCall,
    out: Outcome,
    registry: Mapping[str, Impl] | None,
    runtime: Any,
    *,
    approved: bool,
) -> ToolResult:
    entry = out.entry
    if entry is not None and entry.source == "authored":
        # Only now, with every gate passed, is the tool's module read,
        # digest-checked and imported.
        from charter.runtime.authored import TurnInfo, run_authored

        turn = TurnInfo(session.agent.agent.name, session.stage_name, session.run_id, call.call_id)
        return run_authored(
            entry, call.args, runtime, turn=turn, agent_root=session.agent.agent.root
        )
    if entry is not None and entry.source == "mcp":
        if session.mcp is None:
            return refusal(
                "unavailable",
                "dispatch",
                "mcp-not-connected",
                f"'{entry.name}' belongs to an MCP server this session is not connected to",
            )
        # The call capability was checked by the capability gate; the
        # connection checks it again against the same grants.
        return session.mcp.call(
            entry.name,
            call.args,
            grants=usable_grants(session.agent, entry),
            cancel=getattr(runtime, "cancel", None),
        )
    if entry is not None and entry.source == "script":
        # Decided like any tool, never run: Charter has no Rhai engine, and a
        # silent success would tell the model the script did its work.
        path = entry.script.path if entry.script is not None else entry.name
        return refusal(
            "unavailable",
            "dispatch",
            "script-tool-not-executable",
            f"'{entry.name}' is a Leviath script tool ({path}); this runtime cannot execute Rhai "
            "script tools, so nothing was run. Use another tool, or run this agent under Leviath",
        )
    if entry is None or entry.source != "builtin":
        return refusal(
            "unavailable",
            "dispatch",
            "no-builtin-implementation",
            f"'{call.tool}' is not a built-in tool; this runtime dispatches built-ins only",
        )
    if registry is None:
        from charter.runtime.tools.registry import IMPLEMENTATIONS

        registry = IMPLEMENTATIONS
    if entry.name == "delegate_task":
        # Child controls only narrow; checked here so no runner can widen them.
        from charter.runtime.tools.tasks import guard_delegate

        refused = guard_delegate(call.args, session)
        if refused is not None:
            return refused
    impl = registry.get(entry.impl)
    if impl is None:
        return refusal(
            "unavailable",
            "dispatch",
            "no-implementation",
            f"'{entry.name}' (implementation '{entry.impl}') is not available in this runtime",
        )
    from charter.runtime.tools.registry import calling_session

    try:
        # ``approved``: a person said yes, which is what a credential path
        # inside the workspace needs before the tool opens it. The session
        # is visible to tools that report on it (tools_list, delegate_task).
        with calling_session(session):
            return impl(call.args, runtime, tool=entry.name, approved=approved)
    except Exception as exc:  # a tool bug becomes an error result the model can read
        return ToolResult("error", f"[error] {entry.name} failed: {type(exc).__name__}: {exc}")
