"""The event stream's views."""

from __future__ import annotations

import io
import json

from rich.console import Console

from charter.runtime.run.events import EventBus, JsonLinesSink, LiveView, QuietView, trim

EVENTS = [
    (
        "run_started",
        {"agent_name": "solo", "model": "script:x.yaml", "run_dir": "/r", "yolo": True},
    ),
    ("stage_entered", {"stage": "work", "mode": "autonomous", "visit": 1}),
    ("thinking", {"stage": "work", "iteration": 1}),
    ("model_turn", {"stage": "work", "iteration": 1, "text": "Writing [bold]now[/]"}),
    (
        "tool_finished",
        {
            "tool": "write_file",
            "decision": "ask→allowed",
            "rule": "plan-ask",
            "status": "ok",
            "duration_ms": 12,
            "args": '{"path": "a"}',
            "result": "created a (1 bytes)",
        },
    ),
    ("gate_blocked", {"to": "report", "attempt": 1, "max_attempts": 3, "reason": "no work"}),
    ("edge_taken", {"frm": "work", "to": "report", "condition": "llm_choice"}),
    (
        "run_finished",
        {"status": "completed", "reason": "done", "turns": 2, "tool_calls": 1, "audit": "/r/a"},
    ),
]


def test_json_lines_and_live_view_agree() -> None:
    stream = io.StringIO()
    screen = io.StringIO()
    bus = EventBus([JsonLinesSink(stream), LiveView(Console(file=screen, width=120))])
    for kind, fields in EVENTS:
        bus.emit(kind, "main", **fields)
    bus.close()
    lines = [json.loads(x) for x in stream.getvalue().splitlines()]
    assert [e["kind"] for e in lines] == [k for k, _ in EVENTS]
    assert [e["seq"] for e in lines] == list(range(1, len(EVENTS) + 1))
    shown = screen.getvalue()
    assert "write_file · ask→allowed · ok · 12 ms" in shown
    assert "Writing [bold]now[/]" in shown  # the model's text is never read as markup
    assert "gate on edge to report holds (attempt 1 of 3)" in shown
    assert "audit log: /r/a" in shown


def test_quiet_view_reports_only_problems() -> None:
    out = io.StringIO()
    bus = EventBus([QuietView(out)])
    for kind, fields in EVENTS:
        bus.emit(kind, "main", **fields)
    bus.emit("model_error", "main/1", message="boom")
    bus.emit("run_finished", "main", status="no_output", reason="limits")
    assert out.getvalue() == (
        "charter run: main/1: model error: boom\ncharter run: no_output: limits\n"
    )


def test_a_failing_view_is_dropped_not_fatal(capsys: object) -> None:
    class Broken:
        def handle(self, event: object) -> None:
            raise OSError("gone")

        def close(self) -> None:
            pass

    stream = io.StringIO()
    bus = EventBus([Broken(), JsonLinesSink(stream)])
    bus.emit("notice", "main", message="a")
    bus.emit("notice", "main", message="b")
    assert len(stream.getvalue().splitlines()) == 2


def test_trim() -> None:
    assert trim("abc", 5) == "abc"
    assert trim("abcdefgh", 3) == "abc... [5 more characters]"
    assert trim(None) == ""
