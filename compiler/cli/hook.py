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
(claude-code) rewrites an allowed shell command to run inside the stage's
sandbox; ``--ask auto`` (gemini-cli) puts the plan's ask to the person only in
an interactive session.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from charter.compiler.cli._plan_arg import (
    add_hook_scope_options,
    add_project_options,
    load_plan_or_project,
)

if TYPE_CHECKING:
    from charter.runtime.hooks.common import HookOptions

__all__ = ["TIME_LIMITS", "add_arguments", "plan_operand", "run"]

# Seconds to the watchdog's deny, well below the client's own hook timeout
# (Gemini CLI: 60 s by default; Claude Code: what settings.json says, 10 s in
# what `charter init` writes). A decision takes a fraction of a second.
TIME_LIMITS = {"claude-code": 8.0, "gemini-cli": 20.0}


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
        help="claude-code only: an allowed Bash or Monitor command is rewritten (updatedInput) "
        "to run inside the stage's sandbox through `charter sandbox`, the profile charter run "
        "uses",
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
    if kind != "claude-code" and args.contain:
        print("charter hook: --contain applies to claude-code only", file=sys.stderr)
        return 2
    limit = args.time_limit if args.time_limit is not None else TIME_LIMITS[kind]
    if kind == "gemini-cli":
        return _answer_once(lambda: _decide_gemini(args), _gemini_deny, limit)
    return _answer_once(lambda: _decide_claude(args), _claude_deny, limit)


def _answer_once(
    decide: Callable[[], dict[str, Any]],
    deny: Callable[[str], dict[str, Any]],
    limit: float,
) -> int:
    """Exactly one JSON object on stdout and exit 0, whatever happens: both
    clients read a crash, a timeout or output that is not JSON as no objection."""
    out = sys.stdout
    lock = threading.Lock()

    def answer(obj: dict[str, Any]) -> bool:
        # The first answer wins; the lock is never released, so no second one
        # (the watchdog's, or the decision's after it) can follow. ASCII only:
        # a reason may quote text from the event that is not valid UTF-8 (a
        # lone surrogate), and a failed write would leave no answer.
        if not lock.acquire(blocking=False):
            return False
        out.write(json.dumps(obj) + "\n")
        out.flush()
        return True

    def too_slow() -> None:
        if answer(deny(f"no decision within {limit:g} s")):
            os._exit(0)

    seconds = limit if limit > 0 else 0.01  # NaN too
    timer = threading.Timer(min(seconds, 3600.0), too_slow)
    timer.daemon = True
    timer.start()
    try:
        # Anything else printed on stdout would spoil the one JSON answer.
        with contextlib.redirect_stdout(sys.stderr):
            decided = decide()
    except BaseException as exc:  # fail closed, even on SystemExit or Ctrl-C
        decided = deny(f"the hook could not decide ({type(exc).__name__}: {exc})")
    finally:
        timer.cancel()
    answer(decided)
    return 0


def _decide_claude(args: argparse.Namespace) -> dict[str, Any]:
    from dataclasses import asdict

    from charter.runtime.hooks.claude_code import MAX_EVENT_BYTES, decide_event

    raw = sys.stdin.buffer.read(MAX_EVENT_BYTES + 1)
    return decide_event(raw, **asdict(_options(args)), contain=_sandbox_prefix(args))


def _sandbox_prefix(args: argparse.Namespace) -> list[str] | None:
    """With --contain, the argv that runs ``charter sandbox`` on this plan:
    this very interpreter (the Charter that decided), and the plan or project
    as given, made absolute (a project's plan compiled here is temporary)."""
    if not args.contain:
        return None
    from pathlib import Path

    prefix = [sys.executable, "-m", "charter.compiler", "sandbox", str(Path(args.plan).resolve())]
    if args.config is not None:
        prefix += ["--config", str(Path(args.config).resolve())]
    if args.no_user_config:
        prefix.append("--no-user-config")
    return prefix


def _decide_gemini(args: argparse.Namespace) -> dict[str, Any]:
    from charter.runtime.hooks.gemini_cli import MAX_EVENT_BYTES, decide_event

    raw = sys.stdin.buffer.read(MAX_EVENT_BYTES + 1)
    return decide_event(raw, _options(args), ask=args.ask or "deny")


def _options(args: argparse.Namespace) -> HookOptions:
    from charter.runtime.hooks.common import HookOptions

    return HookOptions(_plan_file(args), args.agent, args.stage, args.workspace, tuple(args.allow))


def _plan_file(args: argparse.Namespace) -> str:
    """The plan file the adapter reads. A project directory is compiled into
    a private temporary file first (removed at exit); when it does not
    compile, the compile errors are on stderr and the adapter is given a path
    that does not exist, so it fails closed like for any unusable plan."""
    from pathlib import Path

    target = Path(args.plan)
    if not target.is_dir():
        return str(args.plan)
    loaded = load_plan_or_project(
        target, config=args.config, use_user_config=not args.no_user_config
    )
    if isinstance(loaded, str):
        print(f"charter hook: {loaded}", file=sys.stderr)
        return str(target / "(does not compile)")
    import tempfile

    folder = tempfile.mkdtemp(prefix="charter-hook-")
    _TEMPORARY.append(folder)
    path = Path(folder) / "plan.json"
    path.write_text(loaded.plan.to_json(), encoding="utf-8")
    return str(path)


# Folders of plans compiled for this call; removed when run() returns (the
# console script ends hooks with os._exit, which runs no atexit handler).
_TEMPORARY: list[str] = []


def _remove_temporary() -> None:
    import shutil

    while _TEMPORARY:
        shutil.rmtree(_TEMPORARY.pop(), ignore_errors=True)


# Built here too, so a failure to import an adapter still answers.
def _gemini_deny(reason: str) -> dict[str, Any]:
    return {"decision": "deny", "reason": f"charter: {reason}"}


def _claude_deny(reason: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": f"charter: {reason}",
        }
    }
