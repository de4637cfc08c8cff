"""Gate 9, approval: a call that still asks goes to the approval provider,
or is answered from the run's approval cache.

A person sees the tool, the redacted arguments (text arguments such as a
file's content shown as text), every reason the call asks and, for a shell
call, the command, the real working directory and the executables it would
run. A provider that raises is a denial; so is expiry. Only :func:`execute
<charter.runtime.gates.pipeline.execute>` asks anybody: :func:`decide
<charter.runtime.gates.pipeline.decide>` reports the ask.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from charter.runtime.gates.outcome import Outcome
from charter.runtime.policy.approval import ApprovalAnswer, ApprovalProvider, ApprovalRequest
from charter.runtime.policy.session import Session
from charter.runtime.results import ToolCall

if TYPE_CHECKING:
    from charter.runtime.tools.executables import Executables

__all__ = ["GATE", "ask", "refused_by_person"]

GATE = "approval"
_PREVIEW = 600
_PREVIEW_TEXT = 4000  # each text argument an approval prompt shows as text


def _preview(args: Mapping[str, Any], redact: Callable[[str], str]) -> str:
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


def ask(
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


def refused_by_person(out: Outcome, ans: ApprovalAnswer, gate: str) -> Outcome:
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
