"""What a person watching a run sees: progress of a long command, the waits
for approval (also in --json), and approval prompts that show the whole
story: every reason, the real working directory, file content as text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def test_a_long_command_reports_its_progress(solo_run: Any, tmp_path: Path) -> None:
    ran = solo_run("solo-progress.yaml", "--yolo", workdir=tmp_path)
    ticks = ran.of("tool_progress")
    assert ticks, ran.kinds()
    assert all(t["tool"] == "shell" and t["call_id"] == "call_0_0" for t in ticks)
    assert [t["elapsed_s"] for t in ticks] == sorted(t["elapsed_s"] for t in ticks)
    last = ticks[-1]
    assert last["elapsed_s"] >= 1 and last["output_lines"] >= 1
    assert last["last_line"].startswith("step ")
    # Progress comes between the call's start and its end.
    kinds = ran.kinds()
    assert kinds.index("tool_started") < kinds.index("tool_progress") < kinds.index("tool_finished")


def test_the_live_view_shows_a_running_line(
    charter_run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a terminal the progress is a transient status line; here, with no
    terminal, rich prints nothing transient, so the view is driven directly."""
    import io

    from rich.console import Console

    from charter.runtime.run.events import Event, LiveView

    out = io.StringIO()
    view = LiveView(Console(file=out, force_terminal=True, width=120))
    fields = {
        "tool": "shell",
        "call_id": "c1",
        "elapsed_s": 12.4,
        "output_bytes": 2048,
        "output_lines": 40,
        "last_line": "step 3 of 9",
    }
    view.handle(Event(1, "t", "tool_progress", "main", fields))
    assert view._running[("main", "c1")] == "shell running 12s, 40 lines (2 KB): step 3 of 9"
    view.handle(
        Event(
            2,
            "t",
            "tool_finished",
            "main",
            {"tool": "shell", "call_id": "c1", "decision": "allow", "status": "ok"},
        )
    )
    assert view._running == {}
    view.close()


def test_the_approval_prompt_names_every_reason_the_real_cwd_and_shows_text(
    solo_run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "300")  # no wrapping inside the prompt panels
    ran = solo_run("solo-approval-prompt.yaml", workdir=tmp_path, stdin="d\nd\n")
    prompt = ran.stderr
    # Both parts of the shell command that need a person, not only the first.
    assert "touch writes files" in prompt and "pip runs project code" in prompt
    assert f"cwd: {tmp_path.resolve()}" in prompt
    assert "cwd: ." not in prompt
    # The file's content as the file would hold it.
    assert "│ first line" in prompt and "│ second line" in prompt
    assert "first line\\nsecond line" not in prompt
    waits = ran.of("approval_waiting")
    assert [w["tool"] for w in waits] == ["shell", "write_file"]
    assert len(waits[0]["reasons"]) == 2
    resumed = ran.of("approval_resumed")
    assert [(r["tool"], r["answer"], r["by"]) for r in resumed] == [
        ("shell", "deny", "terminal"),
        ("write_file", "deny", "terminal"),
    ]
    kinds = ran.kinds()
    assert kinds.index("approval_waiting") < kinds.index("approval_resumed")
