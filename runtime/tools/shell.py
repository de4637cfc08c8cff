"""The shell tools: seed 004's ``shell`` (alias ``bash``) and seed 000's
``terminal``, one implementation.

This module runs a command that the gate pipeline and the shell guard have
already allowed; it decides no permissions. It does enforce what belongs to
execution itself: the working directory stays inside the workspace, the
environment is the run's allowlisted one plus validated overlays and secret
bindings, the timeout is clamped by the earliest binding expiry, and every
byte of output is redacted before anyone sees it.

Result text, for the model: stdout alone on success (with a ``[stderr]``
section when the command wrote any: warnings matter, and the anchor's habit
of dropping them hides why a "successful" command did nothing); on failure an
``[exit code N]`` line followed by ``[stdout]`` and ``[stderr]`` sections.
The operator view also shows the command, the shell and the directory.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from charter.runtime.env import (
    SecretBinding,
    effective_timeout,
    validate_bindings,
    validate_overlay,
)
from charter.runtime.proc import ProcResult, run_command
from charter.runtime.redact import FAILED_MARKER
from charter.runtime.results import ToolResult, refusal
from charter.runtime.workspace import confine

if TYPE_CHECKING:
    from charter.runtime.tools.registry import ToolRuntime

__all__ = ["TERMINAL_DEFAULT_TIMEOUT", "TERMINAL_MAX_TIMEOUT", "shell_argv", "run_shell"]

TERMINAL_DEFAULT_TIMEOUT = 30
TERMINAL_MAX_TIMEOUT = 120
_NAMED = re.compile(r"<redacted:[^>]*>")


def shell_argv(shell: str, command: str) -> list[str]:
    """The argv that runs ``command`` through the plan's resolved shell."""
    lowered = shell.strip().lower()
    if "cmd.exe" in lowered or lowered in ("cmd", "cmd /c") or sys.platform == "win32":
        exe = shell.split()[0] if shell.strip() else "cmd.exe"
        return [exe, "/C", command]
    return [shell.split()[0] if " " in shell.strip() else shell, "-c", command]


def _invalid(rule: str, message: str) -> ToolResult:
    return refusal("invalid", "dispatch", rule, message)


def _format(proc: ProcResult, timeout: int) -> tuple[str, str]:
    """(status, text) in the shape the model reads."""
    if proc.error is not None:
        return "error", f"[error] {proc.error}"
    out, err = proc.stdout.rstrip("\n"), proc.stderr.rstrip("\n")
    if proc.timed_out or proc.cancelled:
        head = (
            f"[timed out] command exceeded {timeout}s; its process tree was stopped"
            if proc.timed_out
            else "[cancelled] the command was cancelled; its process tree was stopped"
        )
        parts = [head]
        if out:
            parts.append(f"[stdout]\n{out}")
        if err:
            parts.append(f"[stderr]\n{err}")
        return ("timeout" if proc.timed_out else "error"), "\n".join(parts)
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

    env = dict(rt.env)
    env.update(overlay)
    for b in bindings:
        name, target = b.source_name, b.target_name
        assert name is not None and target is not None  # validated above
        value = rt.secret_env[name]
        # Known before the command starts, so even its first line is redacted.
        rt.redactor.add(value, target, "binding")
        env[target] = value
    rt.redactor.discover(command)
    rt.redactor.discover_value(overlay)

    argv = shell_argv(rt.shell, command)
    if background:
        from charter.runtime.tools.tasks import start_shell_task

        return start_shell_task(
            rt, argv=argv, cwd=where.resolved, env=env, timeout_s=timeout, command=command
        )
    proc = run_command(
        argv,
        cwd=where.resolved,
        env=env,
        timeout_s=timeout,
        output_cap=rt.output_cap,
        cancel=rt.cancel,
        redact=lambda text: rt.redactor.redact_cut(text, "operator"),
    )
    # The values leave the environment copy as soon as the command is done.
    for b in bindings:
        env.pop(b.target_name or "", None)
    del env

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
    display = f"$ {command}\n(shell: {argv[0]}, cwd: {rel.as_posix() or '.'})\n{operator_text}"
    data: dict[str, Any] = {
        "exit_code": proc.exit_code,
        "timed_out": proc.timed_out,
        "cancelled": proc.cancelled,
        "timeout_s": timeout,
        "duration_ms": round(proc.duration_s * 1000),
        "stdout_bytes": proc.stdout_bytes,
        "stderr_bytes": proc.stderr_bytes,
        "stdout_truncated": proc.stdout_truncated,
        "stderr_truncated": proc.stderr_truncated,
        "shell": argv[0],
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
        rule=None if status == "ok" else ("timeout" if proc.timed_out else "command-failed"),
        display=display,
        data=data,
    )
