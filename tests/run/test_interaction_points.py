"""Interaction points are put to a person before an interactive_points stage
moves on, and the answer routes the run as Leviath routes it: approve moves
on, a directive goes back to the model, an edit is shown again and replaces
the document section, an abort ends the run. With nobody there a point
approves itself, unless it says a person must answer; an unanswered point
approves nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

BLUEPRINT = """[agent]
name = "planner"

[stages.plan]
mode = "interactive_points"
available_tools = ["context_read"]

[[stages.plan.interaction_points]]
name = "plan_approval"
prompt = "Review the plan."
style = "multiple_choice"
options = ["Approve", "Revise \u2014 shorter", "Edit it", "Abort"]
abort_options = ["Abort"]
edit_options = ["Edit it"]
document_region = "plan"
{unattended}

[stages.plan.interaction_points.directives]
"Revise - shorter" = "Cut the plan to one step."

[stages.plan.transitions.build]
hint = "the plan is approved"

[stages.build]
mode = "autonomous"
available_tools = ["context_read"]
"""

FIRST = '  - {stage: plan, text: "Plan: step one, step two.", edge: build}\n'
AGAIN = '  - {stage: plan, text: "Plan: step one.", edge: build}\n'
BUILD = '  - {stage: build, text: "Built."}\n'


def _run(
    charter_run: Any,
    tmp_path: Path,
    stdin: str,
    *args: str,
    turns: str = FIRST + BUILD,
    unattended: str = "",
) -> Any:
    agent = tmp_path / "agent"
    agent.mkdir()
    text = BLUEPRINT.replace("{unattended}", f'unattended = "{unattended}"' if unattended else "")
    (agent / "agent.leviath").write_text(text, "utf-8")
    (tmp_path / "model.yaml").write_text("turns:\n" + turns, "utf-8")
    work = tmp_path / "work"
    work.mkdir()
    return charter_run(
        agent,
        "--agent",
        "planner",
        "--model",
        f"script:{tmp_path / 'model.yaml'}",
        *args,
        workdir=work,
        stdin=stdin,
    )


def _answers(ran: Any) -> list[str]:
    return [e["answer"] for e in ran.of("checkpoint")]


def test_approval_moves_the_stage_on(charter_run: Any, tmp_path: Path) -> None:
    ran = _run(charter_run, tmp_path, "1\n")
    assert _answers(ran) == ["Approve"]
    assert ran.finished["status"] == "completed", ran.finished
    assert [e["stage"] for e in ran.of("model_turn")] == ["plan", "build"]


def test_a_directive_goes_back_to_the_model_and_the_point_is_asked_again(
    charter_run: Any, tmp_path: Path
) -> None:
    ran = _run(charter_run, tmp_path, "2\n1\n", turns=FIRST + AGAIN + BUILD)
    assert _answers(ran) == ["Revise \u2014 shorter", "Approve"]
    assert [e["stage"] for e in ran.of("model_turn")] == ["plan", "plan", "build"]
    assert ran.finished["status"] == "completed"


def test_an_edit_is_shown_again_and_becomes_the_document(charter_run: Any, tmp_path: Path) -> None:
    ran = _run(charter_run, tmp_path, "3\nPlan: my own step.\n.\n1\n")
    assert _answers(ran) == ["Edit it", "Approve"]
    assert ran.finished["status"] == "completed"
    assert "Plan: my own step." in ran.stderr  # shown again for review


def test_abort_ends_the_run(charter_run: Any, tmp_path: Path) -> None:
    ran = _run(charter_run, tmp_path, "4\n")
    assert ran.finished["status"] == "cancelled"
    assert "Abort" in ran.finished["reason"]
    assert [e["stage"] for e in ran.of("model_turn")] == ["plan"]


def test_an_unanswered_point_approves_nothing(charter_run: Any, tmp_path: Path) -> None:
    ran = _run(charter_run, tmp_path, "")  # end of input: nobody answers
    assert ran.finished["status"] == "failed"
    assert "unanswered" in ran.finished["reason"]
    assert [e["stage"] for e in ran.of("model_turn")] == ["plan"]


def test_unattended_a_point_approves_itself(charter_run: Any, tmp_path: Path) -> None:
    ran = _run(charter_run, tmp_path, "", "--yolo")
    assert ran.finished["status"] == "completed", ran.finished
    assert _answers(ran) == ["(approved: unattended run)"]


def test_unattended_a_point_that_needs_a_person_stops_the_run(
    charter_run: Any, tmp_path: Path
) -> None:
    ran = _run(charter_run, tmp_path, "", "--yolo", unattended="ask")
    assert ran.finished["status"] == "failed"
    assert "needs a person" in ran.finished["reason"]
    assert [e["stage"] for e in ran.of("model_turn")] == ["plan"]
