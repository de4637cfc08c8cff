"""``charter hook claude-code|gemini-cli``: answer another agent's pre-tool hook from a plan.

Reads the hook event on stdin, writes exactly one decision JSON line on stdout
and exits 0, including when the input or the plan is unusable: fail closed,
never allow. Claude Code's fail-closed answer is ``ask`` where a person is
asked and ``deny`` where nobody is; Gemini CLI's is ``deny``, since Gemini CLI
lets a call through when a hook exits 1 or times out. A decision not reached
within ``--time-limit`` seconds is answered ``deny``: both clients run the
call when the hook is slower than their timeout. The plan (``PLAN_OR_PROJECT``,
or the older ``--plan PLAN``) is a plan file or a project directory (compiled
first); given a plan file it imports only ``charter.runtime``. ``--contain``
rewrites an allowed shell command to run inside the stage's sandbox;
``--ask auto`` (gemini-cli) puts the plan's ask to the person only in an
interactive session.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

# The front door loads nothing until a name is used: what a hook command
# loads is the watchdog (the standard library alone) and then, inside its
# guard, the one adapter it needs.
import charter.runtime as runtime
from charter.compiler.cli._plan_arg import (
    add_hook_scope_options,
    add_project_options,
    load_plan_or_project,
)

__all__ = ["TIME_LIMITS", "add_arguments", "plan_operand", "run"]

# Seconds to the watchdog's deny (see charter.runtime.hooks.watchdog).
TIME_LIMITS = runtime.HOOK_TIME_LIMITS


def plan_operand(argv: list[str]) -> list[str]:
    """``argv`` with the older ``--plan PLAN`` (or ``--plan=PLAN``) moved to
    the end as the positional plan every other verb takes. Hooks an older
    ``charter init`` wrote into settings files say ``--plan``; read before
    parsing, it fills the one required operand, so a command line with no
    plan, or with two, is still a usage error (exit 2, which blocks the call
    in both clients)."""
    kept: list[str] = []
    moved: list[str] = []
    words = iter(argv)
    for word in words:
        if word == "--plan":
            value = next(words, None)
            if value is None:
                kept.append(word)  # argparse reports the missing value
            else:
                moved.append(value)
        elif word.startswith("--plan="):
            moved.append(word.removeprefix("--plan="))
        else:
            kept.append(word)
    return kept + moved


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "agent_kind", choices=("claude-code", "gemini-cli"), help="which agent's hook to answer"
    )
    p.add_argument(
        "plan",
        metavar="PLAN_OR_PROJECT",
        help="a compiled plan (plan.json) or a project directory (compiled first)",
    )
    add_hook_scope_options(p)
    p.add_argument(
        "--ask",
        choices=("deny", "ask", "defer", "auto"),
        help="gemini-cli only: answer the plan's ask with deny (default), with Gemini CLI's "
        "own ask (a person confirms; never in a headless run, which would wait), with auto: "
        "ask when the Gemini CLI session running the hook is interactive, else deny (what "
        "charter init writes), or defer to Gemini CLI's confirmation settings",
    )
    p.add_argument(
        "--contain",
        action="store_true",
        help="an allowed shell command (Claude Code's Bash or Monitor, Gemini CLI's "
        "run_shell_command) is rewritten to run inside the stage's sandbox through `charter "
        "sandbox`, the profile charter run uses",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        metavar="SECONDS",
        help="answer deny if no decision is reached in this time (default "
        + ", ".join(f"{k} {v:g}" for k, v in TIME_LIMITS.items())
        + "; keep it below the hook's timeout in the client's settings)",
    )
    add_project_options(p)


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    finally:
        _remove_temporary()


def _run(args: argparse.Namespace) -> int:
    kind = args.agent_kind
    if kind == "claude-code" and args.ask is not None:
        print("charter hook: --ask applies to gemini-cli only", file=sys.stderr)
        return 2
    limit = args.time_limit if args.time_limit is not None else TIME_LIMITS[kind]
    return runtime.answer_once(kind, lambda: _decide(args), limit)


def _decide(args: argparse.Namespace) -> dict[str, Any]:
    """The answer to the event on stdin; run inside the watchdog's guard, so
    compiling a project or loading an adapter that fails is still answered."""
    options = runtime.HookOptions(
        _plan_file(args), args.agent, args.stage, args.workspace, tuple(args.allow)
    )
    if args.agent_kind == "gemini-cli":
        contain = _sandbox_prefix(args)
        return runtime.decide_gemini_cli_stdin(options, ask=args.ask or "deny", contain=contain)
    return runtime.decide_claude_code_stdin(options, contain=_sandbox_prefix(args))


def _sandbox_prefix(args: argparse.Namespace) -> list[str] | None:
    """With --contain, the argv that runs ``charter sandbox`` on this plan:
    this very interpreter (the Charter that decided), and the plan or project
    as given, made absolute (a project's plan compiled here is temporary)."""
    if not args.contain:
        return None
    prefix = [sys.executable, "-m", "charter.compiler", "sandbox", str(Path(args.plan).resolve())]
    if args.config is not None:
        prefix += ["--config", str(Path(args.config).resolve())]
    if args.no_user_config:
        prefix.append("--no-user-config")
    return prefix


def _plan_file(args: argparse.Namespace) -> str:
    """The plan file the adapter reads. A project directory is compiled into
    a private temporary file first (removed at exit); when it does not
    compile, the compile errors are on stderr and the adapter is given a path
    that does not exist, so it fails closed like for any unusable plan."""
    target = Path(args.plan)
    if not target.is_dir():
        return str(args.plan)
    loaded = load_plan_or_project(
        target, config=args.config, use_user_config=not args.no_user_config
    )
    if isinstance(loaded, str):
        print(f"charter hook: {loaded}", file=sys.stderr)
        return str(target / "(does not compile)")
    import tempfile  # only for a project compiled here: a plan file never loads it

    folder = tempfile.mkdtemp(prefix="charter-hook-")
    _TEMPORARY.append(folder)
    path = Path(folder) / "plan.json"
    path.write_text(loaded.plan.to_json(), encoding="utf-8")
    return str(path)


# Folders of plans compiled for this call; removed when run() returns (the
# console script ends hooks with os._exit, which runs no atexit handler).
_TEMPORARY: list[str] = []


def _remove_temporary() -> None:
    if not _TEMPORARY:
        return
    import shutil  # only for a project compiled here: a plan file never loads it

    while _TEMPORARY:
        shutil.rmtree(_TEMPORARY.pop(), ignore_errors=True)
