"""A configured nudge (stage, agent, or the user's [nudge]) tells a stage that
is about to end on text, with no tool call made in it, to use its tools, at
most `max` times, as Leviath does; with no level configuring one, nothing is
nudged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from charter.runtime.models.script import ScriptProvider

BLUEPRINT = """[agent]
name = "lazy"

[stages.work]
mode = "autonomous"
available_tools = ["list_dir"]
{nudge}
"""

DONE = "  - {stage: work, text: done}\n"


def _run(
    charter_run: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, nudge: str, turns: int
) -> tuple[Any, ScriptProvider]:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "agent.leviath").write_text(BLUEPRINT.replace("{nudge}", nudge), "utf-8")
    (tmp_path / "model.yaml").write_text("turns:\n" + DONE * turns, "utf-8")
    provider = ScriptProvider.from_file(tmp_path / "model.yaml", record=True)
    import charter.runtime.models as models

    monkeypatch.setattr(models, "load_provider", lambda *a, **k: provider)
    work = tmp_path / "work"
    work.mkdir()
    ran = charter_run(agent, "--agent", "lazy", "--model", "script:unused", "--yolo", workdir=work)
    return ran, provider


def test_a_configured_nudge_is_given_at_most_max_times(
    charter_run: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    nudge = '[stages.work.nudge]\nmax = 2\ntext = "Use your tools in {stage}."\n'
    ran, provider = _run(charter_run, monkeypatch, tmp_path, nudge, 3)
    assert ran.code == 0, ran.finished
    assert len(ran.of("nudged")) == 2
    last = provider.requests[-1]
    assert sum("[System] Use your tools in work." in (m.content or "") for m in last.messages) == 2


def test_without_a_nudge_the_text_ends_the_stage(
    charter_run: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ran, _ = _run(charter_run, monkeypatch, tmp_path, "", 1)
    assert ran.code == 0 and not ran.of("nudged")
