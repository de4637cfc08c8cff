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
import fcntl
import json
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

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


def _paths(workspace: Path, agent: str) -> tuple[Path, Path, Path]:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", agent)
    folder = workspace / ".charter" / "schedules"
    return folder / f"{safe}.json", folder / f"{safe}.state.json", folder / f"{safe}.lock"


def _read_json(path: Path, key: str) -> Any:
    if not path.exists():
        return {} if key == "fired" else []
    data = json.loads(path.read_text(encoding="utf-8"))
    return data.get(key, {} if key == "fired" else [])


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
    from charter.runtime.atomic import write_atomic
    from charter.runtime.schedule import due_minute

    schedules, state, lock = _paths(args.workspace, args.agent)
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+") as held:
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"charter schedule: another scheduler holds {lock}; not firing", file=sys.stderr)
            return 0
        try:
            items = _read_json(schedules, "schedules")
            fired: dict[str, str] = _read_json(state, "fired")
        except (OSError, ValueError) as exc:
            print(f"charter schedule: cannot read {schedules}: {exc}", file=sys.stderr)
            return 1
        failures = 0
        for item in items:
            if not isinstance(item, dict) or not item.get("enabled"):
                continue
            sid, expr = str(item.get("id")), str(item.get("schedule", ""))
            last = datetime.fromisoformat(fired[sid]) if sid in fired else None
            try:
                minute = due_minute(expr, now, last, args.missed)
            except ValueError as exc:
                print(f"charter schedule: {sid}: {exc}; skipped", file=sys.stderr)
                continue
            if minute is None:
                continue
            # Recorded before the run starts: a killed run is not fired again.
            fired[sid] = minute.isoformat()
            text = json.dumps({"fired": fired}, indent=2, sort_keys=True) + "\n"
            write_atomic(state, text, prefix=".schedule-state-", durable=True)
            print(f"charter schedule: firing {sid} for {minute.isoformat()}", flush=True)
            code = subprocess.run(_child_argv(args, str(item.get("prompt", ""))), check=False)
            if code.returncode != 0:
                failures += 1
                print(f"charter schedule: {sid} ended with {code.returncode}", file=sys.stderr)
        return 1 if failures else 0


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
