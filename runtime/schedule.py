"""When a stored schedule is due, and firing it at most once.

Schedules are what the ``schedule_manage`` tool stores
(``.charter/schedules/<agent>.json``: id, five-field cron expression,
prompt, enabled). :func:`matches` reads the cron fields as cron does (lists,
ranges, steps, month and weekday names, 0 or 7 for Sunday; when both day of
month and day of week are restricted, either one matching is enough).
:func:`due_minute` says which minute a schedule should fire for, given when
it last fired and the missed-run policy. The state of firing (the last
minute each schedule fired for) lives beside the schedules, in
``<agent>.state.json``, and a scheduler holds ``<agent>.lock`` (an exclusive
``flock``) while it decides and fires, so two schedulers never fire one
schedule twice. :func:`fire_due_schedules` is one such pass (``charter schedule run``):
each due schedule is recorded as fired for its minute before its run starts,
so a killed run is not fired again, and runs are started one at a time, so a
schedule never overlaps itself.
"""

from __future__ import annotations

import fcntl
import json
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from charter.runtime.atomic import write_atomic

__all__ = ["MissedPolicy", "due_minute", "fire_due_schedules", "matches"]

MissedPolicy = Literal["skip", "once"]
# How far back "once" looks for a missed minute: a scheduler that was down
# for longer fires at most once for all of it, and never scans unboundedly.
MAX_LOOKBACK = timedelta(days=7)

_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


def _value(text: str, field: int) -> int:
    low = text.lower()
    if field == 3 and low in _MONTHS:
        return _MONTHS.index(low) + 1
    if field == 4 and low in _DAYS:
        return _DAYS.index(low)
    return int(text)


def _field(text: str, field: int) -> frozenset[int]:
    lo, hi = _RANGES[field]
    out: set[int] = set()
    for part in text.split(","):
        body, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if step < 1:
            raise ValueError(f"step {step} in {text!r}")
        if body == "*":
            start, end = lo, hi
        elif "-" in body:
            a, b = body.split("-", 1)
            start, end = _value(a, field), _value(b, field)
        else:
            start = _value(body, field)
            end = hi if step_text else start
        if not (lo <= start <= hi and lo <= end <= hi) or start > end:
            raise ValueError(f"{text!r} is outside {lo}-{hi}")
        out.update(range(start, end + 1, step))
    if field == 4 and 7 in out:
        out.add(0)
    return frozenset(out)


def matches(expr: str, when: datetime) -> bool:
    """Whether the five-field cron expression ``expr`` selects the minute of
    ``when``. Raises ValueError for an expression that is not one."""
    parts = expr.split()
    if len(parts) != 5:
        raise ValueError(f"a cron expression has five fields, not {len(parts)}")
    minute, hour, dom, month, dow = (_field(p, i) for i, p in enumerate(parts))
    if when.minute not in minute or when.hour not in hour or when.month not in month:
        return False
    weekday = (when.weekday() + 1) % 7  # cron counts from Sunday = 0
    dom_any, dow_any = parts[2] == "*", parts[4] == "*"
    if dom_any or dow_any:
        return when.day in dom and weekday in dow
    return when.day in dom or weekday in dow


def due_minute(
    expr: str, now: datetime, last: datetime | None, missed: MissedPolicy
) -> datetime | None:
    """The minute the schedule should fire for now, or None: the current
    minute when it matches; with ``once``, else the latest matching minute
    since it last fired (at most :data:`MAX_LOOKBACK` back). Never a minute
    it already fired for."""
    current = now.replace(second=0, microsecond=0)
    if last is not None and last >= current:
        return None
    if matches(expr, current):
        return current
    if missed == "skip" or last is None:
        return None
    floor = max(last + timedelta(minutes=1), current - MAX_LOOKBACK)
    probe = current - timedelta(minutes=1)
    while probe >= floor:
        if matches(expr, probe):
            return probe
        probe -= timedelta(minutes=1)
    return None


def _paths(workspace: Path, agent: str) -> tuple[Path, Path, Path]:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", agent)
    folder = workspace / ".charter" / "schedules"
    return folder / f"{safe}.json", folder / f"{safe}.state.json", folder / f"{safe}.lock"


def _read_json(path: Path, key: str) -> Any:
    if not path.exists():
        return {} if key == "fired" else []
    data = json.loads(path.read_text(encoding="utf-8"))
    return data.get(key, {} if key == "fired" else [])


def fire_due_schedules(
    workspace: Path,
    agent: str,
    now: datetime,
    missed: MissedPolicy,
    run_argv: Callable[[str], Sequence[str]],
) -> int:
    """Fire ``agent``'s schedules due at ``now``, each as the process
    ``run_argv(prompt)`` (an unattended ``charter run``), under the agent's
    lock; a scheduler that finds the lock held fires nothing. Returns 1 when
    a run failed or the schedules cannot be read, else 0. What it does is
    said on stdout, problems on stderr."""
    schedules, state, lock = _paths(workspace, agent)
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
                minute = due_minute(expr, now, last, missed)
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
            code = subprocess.run(list(run_argv(str(item.get("prompt", "")))), check=False)
            if code.returncode != 0:
                failures += 1
                print(f"charter schedule: {sid} ended with {code.returncode}", file=sys.stderr)
        return 1 if failures else 0
