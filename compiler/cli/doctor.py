"""``charter doctor [DIR]``: is Charter's hook installed, does it load, does it answer?

For Claude Code and Gemini CLI (or the one ``--client`` names) it reads the
settings files the client reads for DIR (the workspace's, the user's, the
managed ones), finds Charter's hooks there and, for each:

* installed: the hook runs for every tool, nothing switches hooks off
  (``disableAllHooks``, Gemini CLI's ``hooksConfig``), Gemini CLI will load a
  project hook (the folder is trusted);
* loads: the command's program exists, the plan loads and holds the agent,
  or ``charter serve`` answers ``/v1/health``;
* answers: the hook is run as the client runs it (``sh -c`` with an event on
  stdin, or a POST to the URL): a write outside the workspace must be denied,
  and a read inside must get a well-formed answer.

The checks are the runtime's (``charter.runtime.examine_hooks``, in
``runtime/hooks/doctor.py``); this verb adds the one that needs the compiler
(the Claude Code rules a policy carries) and prints. Lines start with ``ok``,
``warn`` (it works, but fails open in some case) or ``FAIL``. Exit codes: 0
no failure; 1 a failure or no Charter hook found; 2 usage.
"""

from __future__ import annotations

import argparse
from pathlib import Path

# The front door loads nothing until a name is used.
import charter.runtime as runtime
from charter.compiler.cli import verb_parser
from charter.compiler.cli._options import add_hidden_alias
from charter.compiler.frontends.blueprint import load_blueprint
from charter.compiler.frontends.config_toml import SafeShellEntry
from charter.compiler.resolve.client_rules import vouched

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", nargs="?", type=Path, default=Path("."), help="the workspace (default .)")
    p.add_argument("--client", choices=("claude-code", "gemini-cli"), help="check only this one")
    p.add_argument(
        "--time-limit",
        dest="time_limit",
        type=float,
        default=20.0,
        metavar="SECONDS",
        help="stop each hook that has not answered after this long (default 20)",
    )
    add_hidden_alias(p, "--timeout", dest="time_limit", type=float, metavar="SECONDS")


def _plan_of(words: list[str]) -> str | None:
    """The plan a hook command names (see :func:`runtime.hooks.doctor.plan_of`)."""
    return runtime.plan_of(words, _hook_flags())


def _hook_flags() -> frozenset[str]:
    """The hook's options that take no value, read from its own parser."""
    actions = verb_parser("hook")._actions
    return frozenset(s for a in actions if a.nargs == 0 for s in a.option_strings)


def _check_client_rules(
    plan: Path, agent: str | None, root: Path, rep: runtime.DoctorReport
) -> None:
    """The commands the plan allows because the team's Claude Code settings
    allowed them (charter init carried them) must still be allowed there:
    a rule the team removed keeps allowing until the plan is compiled again."""
    if agent is None:
        return
    policy = root / ".charter" / "policy" / agent
    loaded = load_blueprint(policy / "agent.leviath", "agent.leviath")
    bp = loaded.model
    if bp is None or bp.safe_commands is None:
        return
    carried = {
        (e.command, e.exact): e.client_rule
        for e in bp.safe_commands.shell
        if isinstance(e, SafeShellEntry) and e.client_rule is not None
    }
    if not carried:
        return
    try:
        body = runtime.load_plan(plan).body.agent(agent)
    except runtime.PlanError:
        return  # the plan check has said why
    if body is None:
        return
    held = {(e.source, e.exact) for e in body.shell.safe}
    ok = vouched(policy, bp.safe_commands)
    gone = sorted(str(carried[k]) for k in carried if k in held and k not in ok)
    if gone:
        rep.fail(
            f"the plan still allows {', '.join(gone)}, which .claude/settings.json (or "
            "settings.local.json) no longer allows: compile again "
            f"(charter compile {policy} -o {plan})"
        )
    else:
        rep.ok(f"the {len(carried)} Claude Code allow rule(s) the policy carries are still allowed")


def run(args: argparse.Namespace) -> int:
    root: Path = args.dir.resolve()
    if not root.is_dir():
        print(f"charter doctor: {root}: no such directory")
        return 2
    clients = [args.client] if args.client else ["claude-code", "gemini-cli"]
    exam = runtime.HookExam(
        root, args.time_limit, hook_flags=_hook_flags(), plan_checks=(_check_client_rules,)
    )
    total = 0
    failed = False
    for client in clients:
        rep, hooks = runtime.examine_hooks(client, exam)
        total += hooks
        name = "Claude Code" if client == "claude-code" else "Gemini CLI"
        if hooks == 0 and (args.client or rep.lines):
            rep.lines.insert(0, f"{name}: no Charter hook found")
            rep.failed = True
        for line in rep.lines:
            print(line)
        failed = failed or rep.failed
    if total == 0:
        if not args.client:
            print("no Charter hook found for Claude Code or Gemini CLI; set one up with "
                  f"`charter init claude-code {root}` (or gemini-cli)")  # fmt: skip
        return 1
    return 1 if failed else 0
