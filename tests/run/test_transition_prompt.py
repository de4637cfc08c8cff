"""A stage's transition_prompt leads the list of edges the model may choose,
in Leviath's words; without one the list has Charter's own lead."""

from __future__ import annotations

from charter.runtime.plan import Edge, Stage
from charter.runtime.run.prompt import system_prompt


def _stage(**kw: object) -> Stage:
    return Stage(
        name="plan",
        mode="autonomous",
        attended=(),
        unattended=(),
        edges=(Edge(to="build", hint="the plan is done"), Edge(to="plan", hint="keep going")),
        redirect_write="ask",
        **kw,  # type: ignore[arg-type]
    )


def test_the_transition_prompt_leads_the_edges() -> None:
    stage = _stage(transition_prompt="Has the person approved the plan?")
    text = system_prompt("a", None, stage, None, None)
    lead = "Has the person approved the plan?\n\nAvailable transitions:\n"
    assert lead + "- build: the plan is done\n- plan: keep going" in text
    assert "choose the next stage" not in text


def test_without_one_the_edges_have_charters_lead() -> None:
    text = system_prompt("a", None, _stage(), None, None)
    assert "When the work of this stage is done, choose the next stage:\n- build" in text
