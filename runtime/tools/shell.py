"""The shell tools: seed 004's ``shell`` (alias ``bash``) and seed 000's
``terminal``, one implementation.

This module runs a command that the gate pipeline and the shell guard have
already allowed; it decides no permissions. It does enforce what belongs to
execution itself: the working directory stays inside the workspace, the
environment is the run's allowlisted one plus validated overlays and secret
bindings, the timeout is clamped by the earliest binding expiry, and every
byte of output is redacted before anyone sees it.

How much output comes back differs by tool, as the two seeds differ:
``shell`` keeps the first ``rt.output_cap`` bytes (1 MB) of each stream,
``terminal`` the last :data:`TERMINAL_TAIL_CHARS` characters. Either way both
pipes are drained to the end and only the bounded part is ever held
(``charter.runtime.proc.Capture``); totals and truncation flags are in the
result's data.

The result's data also names the resolved shell executable, the command's
own executable where it can be told (best effort, see
:func:`command_executable`) and the spawn record of the process.

Result text, for the model: stdout alone on success (with a ``[stderr]``
section when the command wrote any: warnings matter, and the anchor's habit
of dropping them hides why a "successful" command did nothing); on failure an
``[exit code N]`` line followed by ``[stdout]`` and ``[stderr]`` sections.
The operator view also shows the command, the shell and the directory.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from charter.runtime.policy.env import (
    SecretBinding,
    call_env,
    effective_timeout,
    validate_bindings,
    validate_overlay,
)
from charter.runtime.policy.workspace import confine
from charter.runtime.proc import ProcResult, run_command
from charter.runtime.redact import FAILED_MARKER, MIN_SECRET_LEN, head_overlap
from charter.runtime.results import ToolResult, refusal
from charter.runtime.tools.executables import (
    command_executable,
    resolve_executable,
    resolved,
    shell_argv,
)
from charter.runtime.tools.tasks import start_shell_task
from charter.runtime.tools.tasks.output import TERMINAL_TAIL_CHARS

if TYPE_CHECKING:
    from charter.runtime.policy.session import Session
    from charter.runtime.tools.base import ToolRuntime

__all__ = [
    "TERMINAL_DEFAULT_TIMEOUT",
    "TERMINAL_MAX_TIMEOUT",
    "TERMINAL_TAIL_CHARS",
    "command_executable",
    "resolve_executable",
    "run_shell",
    "shell_argv",
    "unattended_shell",
]

TERMINAL_DEFAULT_TIMEOUT = 30
TERMINAL_MAX_TIMEOUT = 120
# no `<` inside: a marker name never holds one, and `[^>]*` would make a
# megabyte of "<redacted:" quadratic
_NAMED = re.compile(r"<redacted:[^<>]*+>")


def _mask_leading(text: str, bound: Mapping[str, str]) -> str:
    """Mask the end of a bound value that opens ``text``.

    A kept tail can start inside a bound value. The capture drops the tail's
    partial first word, which removes such a fragment unless the value itself
    holds whitespace (a PEM block); then what is left is still the value's
    end, and this masks it. Like the cut-off masking at the end of a head,
    it errs on the side of hiding a few characters too many (the overlap
    search is bounded, see :func:`charter.runtime.redact.head_overlap`).
    """
    longest, name = 0, ""
    for target, value in bound.items():
        n = head_overlap(text, value, MIN_SECRET_LEN)
        if n > longest:
            longest, name = n, target
    return f"<redacted:{name}>{text[longest:]}" if longest else text


def _sandbox_mode(rt: ToolRuntime) -> str | None:
    return rt.sandbox.mode if rt.sandbox is not None else None


def _invalid(rule: str, message: str) -> ToolResult:
    return refusal("invalid", "dispatch", rule, message)


def _format(proc: ProcResult, timeout: int) -> tuple[str, str]:
    """(status, text) in the shape the model reads."""
    if proc.error is not None:
        return "error", f"[error] {proc.error}"
    out, err = proc.stdout.rstrip("\n"), proc.stderr.rstrip("\n")
    if proc.timed_out or proc.cancelled:
        what = (
            f"[timed out] command exceeded {timeout}s"
            if proc.timed_out
            else "[cancelled] the command was cancelled"
        )
        head = (
            f"{what}; its process tree was stopped"
            if proc.stop_error is None
            else f"{what}; its process tree was NOT stopped: {proc.stop_error}"
        )
        parts = [head]
        if out:
            parts.append(f"[stdout]\n{out}")
        if err:
            parts.append(f"[stderr]\n{err}")
        return ("timeout" if proc.timed_out else "error"), "\n".join(parts)
    if proc.stop_error is not None:
        # It ended, but what it left running could not be stopped safely.
        code = "unknown" if proc.exit_code is None else proc.exit_code
        parts = [
            f"[exit code {code}] the command left processes running that were NOT stopped: "
            f"{proc.stop_error}",
            f"[stdout]\n{out}",
            f"[stderr]\n{err}",
        ]
        return "error", "\n".join(parts)
    if proc.exit_code == 0:
        body = out if out else "(command succeeded with no output)"
        if err:
            body += f"\n[stderr]\n{err}"
        return "ok", body
    parts = [f"[exit code {proc.exit_code}]", f"[stdout]\n{out}", f"[stderr]\n{err}"]
    return "error", "\n".join(parts)


def run_shell(
    args: Mapping[str, Any], rt: ToolRuntime, tool: str | None, approved: bool
) -> ToolResult:
    command = args["command"]
    is_terminal = tool == "terminal" or (tool is None and len(set(args) - {"command"}) > 0)
    if not isinstance(command, str) or not command.strip():
        return _invalid("command-empty", "command must be a non-empty string")
    if "\x00" in command:
        return _invalid("command-nul", "command contains a NUL byte")

    timeout = rt.timeout_s
    cwd_arg = "."
    overlay: dict[str, str] = {}
    bindings: list[SecretBinding] = []
    background = bool(is_terminal and args.get("background", False))
    if is_terminal:
        if background and args.get("secret_bindings"):
            return refusal(
                "denied",
                "dispatch",
                "terminal-env-invalid",
                "secret bindings are for foreground commands only",
            )
        timeout = int(args.get("timeout_seconds", TERMINAL_DEFAULT_TIMEOUT))
        if not 1 <= timeout <= TERMINAL_MAX_TIMEOUT:
            return _invalid(
                "terminal-bad-timeout", f"timeout_seconds must be 1 to {TERMINAL_MAX_TIMEOUT}"
            )
        cwd_arg = args.get("cwd", ".")
        overlay = dict(args.get("env") or {})
        errors = validate_overlay(overlay)
        for raw in args.get("secret_bindings") or ():
            bindings.append(
                SecretBinding(
                    source=str(raw.get("source", "")),
                    target=raw.get("target"),
                    expires_in_seconds=raw.get("expires_in_seconds"),
                )
            )
        errors += validate_bindings(bindings, rt.grants)
        for b in bindings:
            name = b.source_name
            if name is not None and name not in rt.secret_env:
                errors.append(f"secret binding source {name} is not set in the runtime environment")
        if errors:
            shown = "; ".join(errors[:3]) + (
                f" and {len(errors) - 3} more" if len(errors) > 3 else ""
            )
            return refusal("denied", "dispatch", "terminal-env-invalid", shown)
        timeout = effective_timeout(timeout, bindings)

    where = confine(rt.workspace, cwd_arg, op="read")
    if where.decision != "allow" or where.resolved is None:
        # A command started in a credential directory would read it freely.
        return refusal("denied", "dispatch", where.rule, f"cwd: {where.message}")
    if not where.resolved.is_dir():
        return _invalid("cwd-not-directory", f"cwd {cwd_arg!r} is not a directory")

    bound: dict[str, str] = {}
    for b in bindings:
        name, target = b.source_name, b.target_name
        assert name is not None and target is not None  # validated above
        # Known before the command starts, so even its first line is redacted.
        rt.redactor.add(rt.secret_env[name], target, "binding")
        bound[target] = rt.secret_env[name]
    rt.redactor.discover(command)
    rt.redactor.discover_value(overlay)

    argv = shell_argv(rt.shell, command)
    # The bound values live only in this per-call environment, which is
    # emptied when the block ends; the runtime's own environment never sees them.
    with call_env(rt.env, overlay=overlay, bindings=bindings, secrets=rt.secret_env) as env:
        exe = resolved(argv, command, cwd=where.resolved, path=env.get("PATH"))
        if background:
            return start_shell_task(
                rt,
                argv=argv,
                cwd=where.resolved,
                env=env,
                timeout_s=timeout,
                command=command,
                sandbox=rt.sandbox,
            )
        # Seed 000's terminal keeps each stream's tail, seed 004's shell its head.
        proc = run_command(
            argv,
            cwd=where.resolved,
            env=env,
            timeout_s=timeout,
            output_cap=None if is_terminal else rt.output_cap,
            tail_chars=TERMINAL_TAIL_CHARS if is_terminal else None,
            cancel=rt.cancel,
            redact=lambda text: rt.redactor.redact_cut(
                _mask_leading(text, bound) if is_terminal else text, "operator"
            ),
            on_output=rt.progress,
            sandbox=rt.sandbox,
        )
    bound.clear()

    if FAILED_MARKER in (proc.stdout, proc.stderr):
        # One stream could not be redacted: nothing of the output is shown.
        return ToolResult(
            "error",
            FAILED_MARKER,
            rule="redaction-failed",
            display=FAILED_MARKER,
            data={"exit_code": proc.exit_code, "redaction_failed": True},
        )
    status, operator_text = _format(proc, timeout)
    # The output was redacted for the operator (secret names kept); the model
    # sees the same text without the names.
    model_text = _NAMED.sub("<redacted>", operator_text)
    rel = where.resolved.relative_to(
        confine(rt.workspace, ".", op="read").resolved or where.resolved
    )
    display = (
        f"$ {command}\n(shell: {exe.shell}, program: {exe.command or 'unknown'}, "
        f"cwd: {rel.as_posix() or '.'})\n{operator_text}"
    )
    data: dict[str, Any] = {
        "exit_code": proc.exit_code,
        "timed_out": proc.timed_out,
        "cancelled": proc.cancelled,
        "timeout_s": timeout,
        "duration_ms": round(proc.duration_s * 1000),
        "output_kept": (
            {"tail_chars": TERMINAL_TAIL_CHARS} if is_terminal else {"head_bytes": rt.output_cap}
        ),
        "stdout_bytes": proc.stdout_bytes,
        "stderr_bytes": proc.stderr_bytes,
        "stdout_chars": proc.stdout_chars,
        "stderr_chars": proc.stderr_chars,
        "stdout_truncated": proc.stdout_truncated,
        "stderr_truncated": proc.stderr_truncated,
        "shell": exe.shell,
        "command_executable": exe.command,
        "process": proc.spawn.as_dict() if proc.spawn is not None else None,
        "stop_error": proc.stop_error,
        # Where it ran: the sandbox's mode (namespace, landlock, container), or None.
        "sandbox": _sandbox_mode(rt),
        "cwd": rel.as_posix() or ".",
        "env_keys": sorted(overlay),
        "bindings": [
            {
                "source": b.source,
                "target": b.target_name,
                "capability": b.capability,
                "expires_in_seconds": b.expires_in_seconds,
            }
            for b in bindings
        ],
    }
    return ToolResult(
        status,  # type: ignore[arg-type]
        model_text,
        gate=None,  # it ran: no gate refused it
        rule=None
        if status == "ok"
        else (
            "timeout"
            if proc.timed_out
            else ("process-not-stopped" if proc.stop_error else "command-failed")
        ),
        display=display,
        data=data,
    )


def unattended_shell(
    session: Session, rt: ToolRuntime, command: str, *, may_write: bool = True
) -> ToolResult:
    """Run ``command`` for a caller with nobody to ask (a script's ``shell``,
    a region's command seed): only the shell guard's allow runs it (in the
    stage's sandbox when the run has one, whose own asks it answers); an ask
    is a refusal. ``may_write``: whether a redirect may write a file."""
    from charter.runtime.shell import evaluate

    verdict = evaluate(
        command,
        cwd=session.workspace,
        workspace=session.workspace,
        policy=session.agent.agent.shell,
    )
    if session.contained:
        from charter.runtime.sandbox.contained import allow_contained

        verdict = allow_contained(verdict, session.contained)
    if verdict.decision != "allow":
        return refusal(
            "denied",
            "shell",
            verdict.rule,
            f"the shell guard answers {verdict.decision} for this command "
            f"({verdict.rule}: {verdict.message}); there is no person to ask",
        )
    if verdict.writes and not may_write:
        return refusal(
            "denied",
            "shell",
            "script-write-denied",
            "script host function 'write_file' (a shell redirect writes a file) is denied",
        )
    return run_shell({"command": command}, rt, "shell", False)
