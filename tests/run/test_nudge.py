"""A configured nudge (stage, agent, or the user's [nudge]) tells a stage that
is about to end on text, with no tool call made in it, to use its tools, at
most `max` times, as Leviath does; with no level configuring one, nothing is
nudged."""

from __future__ import annotations

from typing import Any

BLUEPRINT = """[agent]
name = "lazy"

[stages.work]
mode = "autonomous"
available_tools = ["list_dir"]
{nudge}
"""

DONE = "  - {stage: work, text: done}\n"


def _run(recorded_run: Any, nudge: str, turns: int) -> tuple[Any, Any]:
    blueprint = BLUEPRINT.replace("{nudge}", nudge)
    return recorded_run(blueprint, "turns:\n" + DONE * turns, "lazy", "--yolo")


def test_a_configured_nudge_is_given_at_most_max_times(recorded_run: Any) -> None:
    nudge = '[stages.work.nudge]\nmax = 2\ntext = "Use your tools in {stage}."\n'
    ran, provider = _run(recorded_run, nudge, 3)
    assert ran.code == 0, ran.finished
    assert len(ran.of("nudged")) == 2
    last = provider.requests[-1]
    assert sum("[System] Use your tools in work." in (m.content or "") for m in last.messages) == 2


def test_without_a_nudge_the_text_ends_the_stage(recorded_run: Any) -> None:
    ran, _ = _run(recorded_run, "", 1)
    assert ran.code == 0 and not ran.of("nudged")
