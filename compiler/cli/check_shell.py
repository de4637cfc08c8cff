"""``charter check-shell``: judge shell commands as the runtime's guard does.

``charter check-shell 'CMD'`` prints the decision, rule key, span and message
(and every file the command writes or deletes). Exit codes: 0 allow,
1 deny, 3 ask, 2 usage errors or a bad ``--config``.

``charter check-shell --jsonl`` reads ``{"id": ..., "command": ..., "cwd": ...}``
objects (``id`` and ``cwd`` optional), one a line, from stdin and writes one
``{"id", "decision", "rule", "reason"}`` line per input: the batch form for
auditing transcripts, shared by the check verbs (see ``_jsonl``: a malformed
line is answered ``deny``; the exit code is the most restrictive answer's,
2 when a line was malformed).

The verdict shown is the guard's alone. How it meets the shell tool's
permission (a guard allow lifts the tool's ask; redirects answer to
write_file; launch flags lift a remaining ask; nothing lifts deny) is
described in ``docs/shell-guard.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

import charter.compiler.cli._jsonl as _jsonl

if TYPE_CHECKING:
    from charter.runtime import ShellPolicy, ShellVerdict

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("command", nargs="?", metavar="CMD", help="the shell command to judge")
    p.add_argument(
        "--cwd", metavar="DIR", help="directory the command runs in (default: the workspace)"
    )
    p.add_argument(
        "--workspace", metavar="DIR", help="the workspace root (default: the current directory)"
    )
    p.add_argument("--config", metavar="FILE", help="a config.toml whose [safe_commands] applies")
    _jsonl.add_batch_options(
        p,
        'read {"id", "command", "cwd"} lines from stdin; write {"id", "decision", "rule", '
        '"reason"} lines',
    )


def run(args: argparse.Namespace) -> int:
    if _jsonl.operand_problem(
        "check-shell", args.command, args.jsonl, operand="CMD", items="commands"
    ):
        return 2
    policy = _policy(args.config)
    if policy is None:
        return 2
    from charter.runtime import judge_command

    workspace = os.path.abspath(args.workspace or os.getcwd())
    default_cwd = os.path.join(workspace, args.cwd) if args.cwd else workspace

    def one(command: str) -> int:
        verdict = judge_command(command, cwd=default_cwd, workspace=workspace, policy=policy)
        if args.format == "json":
            print(json.dumps({"command": command, **verdict.to_json()}, ensure_ascii=False))
        else:
            print(_render(command, verdict))
        return _jsonl.exit_code(verdict.decision)

    def answer(obj: dict[str, Any]) -> dict[str, Any]:
        command = _jsonl.text_field(obj, "command")
        cwd = _jsonl.text_field(obj, "cwd", required=False)
        assert command is not None
        run_cwd = os.path.join(workspace, cwd) if cwd else default_cwd
        v = judge_command(command, cwd=run_cwd, workspace=workspace, policy=policy)
        return {"decision": v.decision, "rule": v.rule, "reason": v.message}

    return _jsonl.one_or_batch(args.command, args.jsonl, one, answer)


def _policy(config: str | None) -> ShellPolicy | None:
    from charter.runtime import ShellPolicy

    if config is None:
        return ShellPolicy()
    # The compiler is loaded only for --config: judging with the defaults
    # never pays for it.
    from pathlib import Path

    from charter.compiler import shell_policy_from_config

    policy, diags = shell_policy_from_config(Path(config), config)
    for d in diags:
        print(
            f"{d.span.path}:{d.span.line}:{d.span.col}: {d.severity.value} {d.code} "
            f"[{d.name}] {d.message}",
            file=sys.stderr,
        )
    return policy


def _render(command: str, v: ShellVerdict) -> str:
    start, end = v.span
    lines = [f"{v.decision}  [{v.rule}]  {v.message}"]
    if "\n" not in command and end > start:
        lines.append(f"  {command}")
        lines.append("  " + " " * start + "^" * max(1, end - start))
    else:
        lines.append(f"  at characters {start}-{end}")
    for w in v.writes:
        if w.path is None:
            lines.append("  writes: a target only known at run time")
        else:
            where = "inside the workspace" if w.inside_workspace else "OUTSIDE the workspace"
            lines.append(f"  writes: {w.path} ({where})")
    if v.ungrantable:
        lines.append("  ungrantable: an approval of this command is never reused")
    others = [f for f in v.findings if (f.rule, f.span) != (v.rule, v.span)]
    for f in others:
        lines.append(f"  also {f.decision} [{f.rule}] at {f.span[0]}-{f.span[1]}: {f.message}")
    return "\n".join(lines)
