"""[repetition_detection] nudges the model out of a loop as Leviath does: the
same call with the same arguments max_repeat_calls times, or a long run of
read-only calls, adds a [System] line; a write clears the counts. Without the
table nothing is counted (it is opt-in in Leviath too)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from charter.runtime.plan import RepetitionPolicy
from charter.runtime.run.repetition import RepetitionWatch

BLUEPRINT = """[agent]
name = "looper"
{table}

[stages.work]
mode = "autonomous"
available_tools = ["read_file"]
"""

READ = "{stage: work, tool_calls: [{name: read_file, arguments: {path: a.txt}}]}"
SCRIPT = f"turns:\n  - {READ}\n  - {READ}\n  - {{stage: work, text: done}}\n"


def _requests(recorded_run: Any, tmp_path: Path, table: str) -> list[Any]:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "a.txt").write_text("x")
    ran, provider = recorded_run(BLUEPRINT.replace("{table}", table), SCRIPT, "looper", "--yolo")
    assert ran.code == 0, ran.finished
    return list(provider.requests)


def _nudged(request: Any) -> bool:
    return any("[System] You have called read_file" in (m.content or "") for m in request.messages)


def test_the_same_call_twice_is_nudged(recorded_run: Any, tmp_path: Path) -> None:
    table = "\n[repetition_detection]\nmax_repeat_calls = 2\n"
    first, second, third = _requests(recorded_run, tmp_path, table)
    assert not _nudged(second) and _nudged(third)


def test_without_the_table_nothing_is_counted(recorded_run: Any, tmp_path: Path) -> None:
    *_, last = _requests(recorded_run, tmp_path, "")
    assert not _nudged(last)


def test_a_write_clears_the_counts_and_a_read_only_streak_is_nudged() -> None:
    watch = RepetitionWatch(RepetitionPolicy(max_repeat_calls=2, max_readonly_streak=3))
    assert watch.record("read_file", {"path": "a"}) is None
    assert watch.record("write_file", {"path": "a"}) is None
    assert watch.record("read_file", {"path": "a"}) is None
    assert watch.record("list_dir", {"path": "."}) is None
    streak = watch.record("context_read", {})
    assert streak is not None and "3 read-only tool calls" in streak
    assert RepetitionWatch(RepetitionPolicy(enabled=False)).record("x", {}) is None
