"""Schedules stored by schedule_manage fire: once, on time, as unattended
runs recorded like any run; never twice for one minute, and not while
another scheduler holds the lock."""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from charter.runtime.schedule import due_minute, matches

BLUEPRINT = """[agent]
name = "planner"

[stages.work]
mode = "autonomous"
available_tools = ["schedule_manage", "list_dir"]
"""


@pytest.mark.parametrize(
    ("expr", "when", "expected"),
    [
        ("30 9 * * *", "2026-12-04T09:30", True),
        ("30 9 * * *", "2026-12-04T09:31", False),
        ("*/15 * * * *", "2026-12-04T10:45", True),
        ("0 9-17 * * mon-fri", "2026-12-05T12:00", False),  # a Saturday
        ("0 9-17 * * mon-fri", "2026-12-04T12:00", True),  # a Friday
        ("0 0 1 * sun", "2026-12-06T00:00", True),  # Sunday: either day field is enough
        ("0 0 1 * 7", "2026-12-06T00:00", True),  # 7 is Sunday too
        ("0 12 * dec *", "2026-12-04T12:00", True),
    ],
)
def test_cron_matching(expr: str, when: str, expected: bool) -> None:
    assert matches(expr, datetime.fromisoformat(when)) is expected


def test_missed_runs_fire_once_or_are_skipped() -> None:
    last = datetime.fromisoformat("2026-12-03T09:30")
    later = datetime.fromisoformat("2026-12-04T11:00")
    assert due_minute("30 9 * * *", later, last, "once") == datetime.fromisoformat(
        "2026-12-04T09:30"
    )
    assert due_minute("30 9 * * *", later, last, "skip") is None
    on_time = datetime.fromisoformat("2026-12-04T09:30:40")
    assert due_minute("30 9 * * *", on_time, on_time.replace(second=0), "once") is None


def _scheduler(
    tmp_path: Path, agent: Path, work: Path, now: str
) -> subprocess.CompletedProcess[str]:
    model = tmp_path / "scheduled.yaml"
    model.write_text("turns:\n  - {text: The daily note is written.}\n")
    cmd = [
        sys.executable, "-c", "from charter.compiler.cli import entry; entry()", "schedule",
        "run", str(agent), "--agent", "planner", "--workspace", str(work), "--model",
        f"script:{model}", "--no-user-config", "--now", now,
    ]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def _runs(work: Path) -> list[dict[str, Any]]:
    started = []
    for events in sorted((work / ".charter" / "runs").glob("*/events.jsonl")):
        first = json.loads(events.read_text().splitlines()[0])
        started.append(first)
    return sorted(started, key=lambda e: e["ts"])


def test_a_schedule_made_by_schedule_manage_fires_once_on_time(
    charter_run: Any, tmp_path: Path
) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "agent.leviath").write_text(BLUEPRINT)
    work = tmp_path / "work"
    work.mkdir()
    create = (
        "{action: create, schedule: '30 9 * * *', prompt: Write the daily note, schedule_id: daily}"
    )
    (tmp_path / "model.yaml").write_text(
        f"turns:\n  - {{tool_calls: [{{name: schedule_manage, arguments: {create}}}]}}\n"
        "  - {text: Scheduled.}\n"
    )
    made = charter_run(
        agent, "--agent", "planner", "--allow", "schedule_manage", "--model",
        f"script:{tmp_path / 'model.yaml'}", workdir=work,
    )  # fmt: skip
    assert made.code == 0, made.stderr
    assert "created daily" in made.tool_results("schedule_manage")[0]
    before = len(_runs(work))

    early = _scheduler(tmp_path, agent, work, "2026-12-04T09:29:50")
    assert early.returncode == 0, early.stderr
    assert len(_runs(work)) == before  # not due yet

    fired = _scheduler(tmp_path, agent, work, "2026-12-04T09:30:05")
    assert fired.returncode == 0, fired.stderr
    assert "firing daily for 2026-12-04T09:30:00" in fired.stdout
    runs = _runs(work)
    assert len(runs) == before + 1
    assert runs[-1]["task"] == "Write the daily note"

    again = _scheduler(tmp_path, agent, work, "2026-12-04T09:30:40")
    assert "firing" not in again.stdout
    assert len(_runs(work)) == before + 1  # once per minute, however often asked

    lock = work / ".charter" / "schedules" / "planner.lock"
    with open(lock, "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        blocked = _scheduler(tmp_path, agent, work, "2026-12-05T09:30:00")
    assert "another scheduler holds" in blocked.stderr
    assert len(_runs(work)) == before + 1
