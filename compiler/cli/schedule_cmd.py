"""``charter schedule run``: fire the schedules an agent stored with
``schedule_manage``, each as an unattended ``charter run`` of the same plan
(the same gates, sandbox and audit log as any run, its own run record).

Decisions are made under an exclusive lock on ``<agent>.lock``, and a
schedule's minute is recorded as fired before its run starts, so a schedule
fires at most once per minute however many schedulers run and whether or
not a run is killed. Runs are started one at a time, so a schedule never
overlaps itself. ``--missed once`` (the default) fires once for minutes
missed while no scheduler ran; ``--missed skip`` fires only on time.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime
from pathlib import Path

# The front door loads nothing until a name is used.
import charter.runtime as runtime

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    r = sub.add_parser("run", help="fire due schedules as unattended runs")
    r.add_argument("target", metavar="PLAN_OR_PROJECT", help="what `charter run` is given")
    r.add_argument("--agent", required=True, help="whose schedules to fire")
    r.add_argument("--workspace", type=Path, default=Path("."), help="the runs' workspace")
    r.add_argument("--model", help="the model for the runs (as charter run --model)")
    r.add_argument("--config", type=Path, help="the user config.toml (as charter run)")
    r.add_argument("--no-user-config", action="store_true", help="ignore the user's config")
    r.add_argument("--missed", choices=("once", "skip"), default="once", help="missed-run policy")
    r.add_argument("--once", action="store_true", help="check once and exit (for cron/timers)")
    r.add_argument("--interval", type=float, default=30.0, help="seconds between checks")
    r.add_argument("--now", help=argparse.SUPPRESS)  # ISO time, for tests


def _child_argv(args: argparse.Namespace, prompt: str) -> list[str]:
    argv = [
        sys.executable, "-c", "from charter.compiler.cli import entry; entry()", "run",
        args.target, "--agent", args.agent, "--task", prompt, "--yolo",
        "--workspace", str(args.workspace), "--quiet",
    ]  # fmt: skip
    if args.model:
        argv += ["--model", args.model]
    if args.config:
        argv += ["--config", str(args.config)]
    if args.no_user_config:
        argv.append("--no-user-config")
    return argv


def _tick(args: argparse.Namespace, now: datetime) -> int:
    return runtime.fire_due_schedules(
        args.workspace, args.agent, now, args.missed, lambda prompt: _child_argv(args, prompt)
    )


def run(args: argparse.Namespace) -> int:
    if args.now:
        return _tick(args, datetime.fromisoformat(args.now))
    if args.once:
        return _tick(args, datetime.now())
    try:
        while True:
            _tick(args, datetime.now())
            time.sleep(max(1.0, args.interval))
    except KeyboardInterrupt:
        return 130
