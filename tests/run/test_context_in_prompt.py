"""Context sections and checklists are folded back into the system prompt
(seed 004, context tools): what the agent writes on one turn is in the system
prompt the model receives on the next, and in later stages too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from charter.runtime.models.script import ScriptProvider
from charter.runtime.tools.context import ContextEntry, RunStore, fold_sections

BLUEPRINT = """
[agent]
name = "keeper"
entry_stage = "gather"

[stages.gather]
mode = "autonomous"
available_tools = ["context_write", "context_append", "context_delete", "todo_add", "todo_done"]
max_iterations = 5

[stages.gather.transitions.answer]
hint = "The notes are taken"
transform = "clear"

[stages.answer]
mode = "output"
available_tools = []
max_iterations = 2

[stages.answer.output]
format = "text"

[stages.answer.transitions]
"""

SCRIPT = """
turns:
  - stage: gather
    tool_calls:
      - name: context_write
        arguments: {region: findings, key: build, content: the build runs with make check}
      - name: todo_add
        arguments: {region: plan, item: write the release notes}
      - name: context_write
        arguments: {region: scratch, content: a thought to drop later}
  - stage: gather
    tool_calls:
      - name: context_append
        arguments: {region: findings, content: tests live under t/}
      - name: todo_done
        arguments: {region: plan, id: 0}
      - name: context_delete
        arguments: {region: scratch, oldest: 1}
  - stage: gather
    edge: answer
  - stage: answer
    tool_calls:
      - name: submit_output
        arguments: {content: noted}
"""


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> ScriptProvider:
    """A recording scripted model that `charter run` uses instead of loading one."""
    script = tmp_path / "keeper.script.yaml"
    script.write_text(SCRIPT)
    provider = ScriptProvider.from_file(script, record=True)
    import charter.runtime.models as models

    monkeypatch.setattr(models, "load_provider", lambda *a, **k: provider)
    return provider


def test_a_section_written_on_one_turn_is_in_the_next_turns_system_prompt(
    charter_run: Any, recorded: ScriptProvider, tmp_path: Path
) -> None:
    project = tmp_path / "keeper"
    project.mkdir()
    (project / "agent.leviath").write_text(BLUEPRINT)
    work = tmp_path / "work"
    work.mkdir()
    ran = charter_run(
        project, "--agent", "keeper", "--model", "script:unused", "--yolo", workdir=work
    )
    assert ran.code == 0, ran.finished["reason"]
    assert ran.finished["output_text"] == "noted"

    first, second, third, fourth = recorded.requests
    # Turn 1: nothing written yet, so the prompt carries no memory block.
    assert "the build runs with make check" not in first.system
    assert "Your context sections" not in first.system
    # Turn 2: what turn 1 wrote is in the system prompt itself (not only in
    # the tool results of the conversation).
    assert first.messages[0].role == second.messages[0].role == "system"
    assert "### Section 'findings' (1 entry)" in second.system
    assert "[build] the build runs with make check" in second.system
    assert "- [ ] 0: write the release notes" in second.system
    assert "a thought to drop later" in second.system
    # Turn 3: the prompt follows the changes of turn 2, including a release.
    assert "### Section 'findings' (2 entries)" in third.system
    assert "- tests live under t/" in third.system
    assert "- [x] 0: write the release notes" in third.system
    assert "a thought to drop later" not in third.system
    assert "### Section 'scratch' (0 entries)\n(empty)" in third.system
    # The next stage was entered with a cleared conversation; the sections
    # are still in front of the model, in that stage's own system prompt.
    assert fourth.stage == "answer"
    assert "stage 'answer'" in fourth.system
    assert not any(m.role == "tool" for m in fourth.messages)
    assert "[build] the build runs with make check" in fourth.system
    assert "- [x] 0: write the release notes" in fourth.system


def test_the_folded_block_is_bounded_and_says_what_it_left_out() -> None:
    store = RunStore()
    store.regions["small"] = [ContextEntry("keep me", "k")]
    store.regions["huge"] = [ContextEntry("x" * 5000)]
    store.regions["after"] = [ContextEntry("never shown")]
    text = fold_sections(store, max_chars=1000)
    assert text is not None
    assert "[k] keep me" in text
    assert "never shown" not in text
    assert "x" * 1000 not in text and "x" * 100 in text  # cut inside the entry
    # The note names each section that was cut and how to reach it.
    assert "section 'huge' (" in text and "section 'after' (" in text
    assert "context_read" in text
    assert "section 'small'" not in text.split("[not shown")[1]
    assert fold_sections(RunStore()) is None
