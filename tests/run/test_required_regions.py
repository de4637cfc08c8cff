"""A required region the agent writes holds its stage: ending it while the
section is empty sends the stage back with Leviath's [System] line, up to
max_revisits times (3 when unset), then it moves on with a notice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

BLUEPRINT = """[agent]
name = "noter"

[context.regions.notes]
kind = "pinned"
required = true
required_message = "Write your findings to '{region}' first."

[stages.work]
mode = "autonomous"
available_tools = ["context_write"]
max_revisits = 2
"""

WRITE = "{stage: work, tool_calls: [{name: context_write, arguments: {region: notes, content: x}}]}"


def _run(charter_run: Any, tmp_path: Path, turns: list[str]) -> Any:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "agent.leviath").write_text(BLUEPRINT, "utf-8")
    (tmp_path / "model.yaml").write_text("turns:\n" + "".join(f"  - {t}\n" for t in turns))
    work = tmp_path / "work"
    work.mkdir()
    model = f"script:{tmp_path / 'model.yaml'}"
    return charter_run(agent, "--agent", "noter", "--model", model, "--yolo", workdir=work)


def test_the_stage_is_sent_back_until_the_section_is_written(
    charter_run: Any, tmp_path: Path
) -> None:
    ran = _run(
        charter_run, tmp_path, ["{stage: work, text: done}", WRITE, "{stage: work, text: done}"]
    )
    assert ran.code == 0, ran.finished
    [back] = ran.of("required_regions")
    assert back["empty"] == ["notes"]
    assert ran.finished["output_text"] == "done"


def test_after_max_revisits_it_moves_on_with_a_notice(charter_run: Any, tmp_path: Path) -> None:
    ran = _run(charter_run, tmp_path, ["{stage: work, text: done}"] * 3)
    assert len(ran.of("required_regions")) == 2
    assert any("still empty after 2 re-runs" in n["message"] for n in ran.of("notice"))
    assert ran.code == 0, ran.finished
