"""Context sections and checklists are folded back into the system prompt
(seed 004, context tools): what the agent writes on one turn is in the system
prompt the model receives on the next, and in later stages too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from charter.runtime.models.script import ScriptProvider
from charter.runtime.tools.context import ContextEntry, RunStore, fold_sections

# The keeper agent writes context sections while it gathers, then answers.
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "run"


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> ScriptProvider:
    """A recording scripted model that `charter run` uses instead of loading one."""
    provider = ScriptProvider.from_file(FIXTURES / "scripts" / "keeper.yaml", record=True)
    import charter.runtime.models as models

    monkeypatch.setattr(models, "load_provider", lambda *a, **k: provider)
    return provider


def test_a_section_written_on_one_turn_is_in_the_next_turns_system_prompt(
    charter_run: Any, recorded: ScriptProvider, tmp_path: Path
) -> None:
    project = FIXTURES / "keeper"
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
