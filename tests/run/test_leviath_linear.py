"""A Leviath blueprint without transitions runs its stages in the order they
are declared, and the last one ends the run with the model's answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

BLUEPRINT = """[agent]
name = "linear"

[stages.first]
mode = "autonomous"
available_tools = ["list_dir"]

[stages.second]
mode = "autonomous"
available_tools = ["list_dir"]

[stages.third]
mode = "autonomous"
available_tools = ["read_file"]
"""

SCRIPT = """turns:
  - {stage: first, text: Looked around.}
  - {stage: second, tool_calls: [{name: list_dir, arguments: {path: "."}}]}
  - {stage: second, text: Listed.}
  - {stage: third, text: All three stages ran in order.}
"""


def test_stages_without_transitions_run_in_order(charter_run: Any, tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "agent.leviath").write_text(BLUEPRINT)
    (tmp_path / "model.yaml").write_text(SCRIPT)
    work = tmp_path / "work"
    work.mkdir()
    ran = charter_run(
        agent, "--agent", "linear", "--model", f"script:{tmp_path / 'model.yaml'}", workdir=work
    )
    assert ran.code == 0, ran.stderr
    assert [(e["to"], e["condition"]) for e in ran.of("edge_taken")] == [
        ("second", "always"),
        ("third", "always"),
    ]
    assert ran.finished["status"] == "completed"
    assert ran.finished["output_text"] == "All three stages ran in order."
