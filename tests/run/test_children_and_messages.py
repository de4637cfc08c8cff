"""requires_children holds a stage until every sub-agent it started has
ended, as Leviath holds it; a stage with accepts_messages = false takes no
message from its parent (issue 25: both keys were accepted and dropped)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

BLUEPRINT = """[agent]
name = "boss"

[stages.work]
mode = "autonomous"
available_tools = ["spawn_agent", "send_to_agent"]
requires_children = {requires}
accepts_messages = false

[stages.work.transitions.done]
hint = "the work is handed out"

[stages.done]
mode = "autonomous"
available_tools = []
"""

SCRIPT = """turns:
  - stage: work
    tool_calls: [{name: spawn_agent, arguments: {blueprint: boss, task: help}}]
  - {stage: work, edge: done}
  - {stage: done, text: "all done"}
agents:
  boss:
    - {stage: work, delay_s: 0.6, edge: done}
    - {stage: done, text: "child finished"}
"""

# the same, with a message to the child while it is in a stage that takes none
SEND = SCRIPT.replace(
    "  - {stage: work, edge: done}\n",
    "  - stage: work\n"
    "    tool_calls: [{name: send_to_agent, arguments: {agent_id: main/1, message: hurry}}]\n"
    "  - {stage: work, edge: done}\n",
    1,
)


def _run(charter_run: Any, tmp_path: Path, requires: str, script: str = SCRIPT) -> Any:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "agent.leviath").write_text(BLUEPRINT.replace("{requires}", requires), "utf-8")
    (tmp_path / "model.yaml").write_text(script, "utf-8")
    work = tmp_path / "work"
    work.mkdir()
    return charter_run(
        agent,
        "--agent",
        "boss",
        "--model",
        f"script:{tmp_path / 'model.yaml'}",
        "--yolo",
        workdir=work,
    )


def _order(ran: Any) -> list[str]:
    return [
        f"{e['kind']}:{e['agent']}"
        for e in ran.events
        if e["kind"] in ("agent_finished", "edge_taken", "waiting_for_children")
    ]


def test_a_stage_that_requires_children_waits_for_them(charter_run: Any, tmp_path: Path) -> None:
    ran = _run(charter_run, tmp_path, "true")
    assert ran.code == 0, ran.finished
    order = _order(ran)
    assert order.index("agent_finished:main/1") < order.index("edge_taken:main"), order
    assert "waiting_for_children:main" in order


def test_without_it_the_stage_moves_on_at_once(charter_run: Any, tmp_path: Path) -> None:
    ran = _run(charter_run, tmp_path, "false")
    order = _order(ran)
    assert order.index("edge_taken:main") < order.index("agent_finished:main/1"), order


def test_a_stage_that_takes_no_messages_refuses_them(charter_run: Any, tmp_path: Path) -> None:
    ran = _run(charter_run, tmp_path, "true", SEND)
    [sent] = ran.tool_results("send_to_agent")
    assert "does not take messages" in sent
