"""An answer submitted with submit_output in a stage that ends with text is
the agent's answer: the closing text after it does not replace it (issue 25:
a fan-out worker's submitted rows were lost to its last remark)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

BLUEPRINT = """[agent]
name = "worker"

[stages.gather]
mode = "autonomous"
available_tools = ["submit_output"]
"""

SCRIPT = """turns:
  - {stage: gather, tool_calls: [{name: submit_output, arguments: {content: "a,b\\\\n1,2"}}]}
  - {stage: gather, text: "Done, the rows are submitted."}
"""


def test_the_submitted_output_is_the_answer(charter_run: Any, tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "agent.leviath").write_text(BLUEPRINT, "utf-8")
    (tmp_path / "model.yaml").write_text(SCRIPT, "utf-8")
    work = tmp_path / "work"
    work.mkdir()
    ran = charter_run(
        agent,
        "--agent",
        "worker",
        "--model",
        f"script:{tmp_path / 'model.yaml'}",
        "--yolo",
        workdir=work,
    )
    assert ran.code == 0, ran.finished
    assert ran.finished["output_text"] == "a,b\\n1,2"
