"""What the model is told on a turn: the system prompt and the tool
definitions.

The tool definitions are the stage's exactly as the plan compiled them (the
attended or the unattended set), with one exception: when a parent asked a
sub-agent for another answer shape, ``submit_output``'s description is
rendered again for that shape. The system prompt is rebuilt before every
turn: it ends with the agent's context sections and checklists as they stand
(the part that changes, last, so a provider can cache the unchanged prefix).
"""

from __future__ import annotations

import dataclasses
import functools

from charter.runtime.models import EdgeChoice, ToolSpec
from charter.runtime.plan import OutputSpec, Stage
from charter.runtime.policy.session import Session
from charter.runtime.run.shape import ends_with_text, is_output_stage

__all__ = ["hinted_edges", "offered_specs", "system_prompt"]


def system_prompt(
    agent_name: str,
    parent: str | None,
    stage: Stage,
    spec: OutputSpec | None,
    memory: str | None,
    soul: str | None = None,
    *,
    instructions_in_memory: bool = False,
) -> str:
    """The system prompt for a turn in ``stage``: who the agent is, the
    stage's own prompt and shell hint, the answer shape ``spec`` (when the
    stage ends with an answer), the edges it may choose, and last the
    agent's folded context sections (``memory``). A Demiurge core's
    ``soul`` (its SOUL.md) comes first, where its own host puts it. With
    ``instructions_in_memory`` the stage's prompt is inside ``memory`` (a
    region of its layout holds it) and is not said twice."""
    who = f"You are the agent '{agent_name}'"
    if parent is not None:
        who += f", a sub-agent started by agent {parent}; nobody is watching this run"
    parts = [who + ".", f"You are in stage '{stage.name}' ({stage.mode})."]
    if soul:
        parts.insert(0, soul.strip())
    if stage.system_prompt and not instructions_in_memory:
        parts.append(stage.system_prompt.strip())
    if stage.shell_hint:
        parts.append(stage.shell_hint.strip())
    if is_output_stage(stage):
        parts.append("This stage ends the run: give the final answer with submit_output.")
    elif spec is not None and ends_with_text(stage):
        parts.append("Your final answer is the text of your reply when you stop calling tools.")
    if spec is not None and (is_output_stage(stage) or ends_with_text(stage)):
        if spec.format:
            parts.append(f"Answer format: {spec.format}.")
        if spec.instructions:
            parts.append(f"Instructions for the answer: {spec.instructions.strip()}")
        if spec.example:
            parts.append(f"Example answer:\n{spec.example.strip()}")
    hinted = hinted_edges(stage)
    if hinted:
        lines = [f"- {e.target}: {e.hint}" if e.hint else f"- {e.target}" for e in hinted]
        # the stage's own transition prompt leads the list, as in Leviath
        lead = (
            stage.transition_prompt.strip() + "\n\nAvailable transitions:"
            if stage.transition_prompt
            else "When the work of this stage is done, choose the next stage:"
        )
        parts.append(lead + "\n" + "\n".join(lines))
    # Last, so the part that changes from turn to turn comes after the
    # part that does not (providers cache a prompt's unchanged prefix).
    if memory is not None:
        parts.append(memory)
    return "\n\n".join(parts)


def hinted_edges(stage: Stage) -> list[EdgeChoice]:
    """The edges the model may choose (``llm_choice``), with their hints."""
    return [EdgeChoice(e.to, e.hint) for e in stage.edges if e.condition == "llm_choice"]


def offered_specs(session: Session, shape: OutputSpec | None) -> list[ToolSpec]:
    """The tool definitions of the session's current stage, in the plan's
    order. ``shape``: the answer shape a parent asked for, if any, which
    submit_output's description must show instead of the declared one."""
    offered = session.offered()
    stage = session.stage.stage
    order = stage.unattended if session.unattended else stage.attended
    tools = session.agent.tools
    specs: list[ToolSpec] = []
    # The plan rendered submit_output's description with the stage's
    # declared shape; a parent's override must replace it there too, or
    # the tool would ask for the very shape that was overridden.
    for name in order:
        entry = tools.get(name)
        if name in offered and entry is not None:
            try:
                spec = ToolSpec.from_entry(entry)
            except ValueError:
                # A schema that is not an object: the schema gate refuses
                # every call (schema-unusable); the model is still told the
                # tool takes an object, so its call gets that refusal.
                spec = ToolSpec(entry.name, entry.description, {"type": "object"})
            if shape is not None and entry.description_template is not None:
                spec = dataclasses.replace(
                    spec,
                    description=_submit_description(
                        entry.description_template,
                        entry.name,
                        shape.format,
                        shape.instructions,
                        shape.example,
                    ),
                )
            specs.append(spec)
    return specs


@functools.lru_cache(maxsize=64)
def _submit_description(
    template: str, tool: str, fmt: str | None, instructions: str | None, example: str | None
) -> str:
    """The description of a tool that shows the answer shape (submit_output),
    rendered for a shape the parent overrode from the template the plan
    pinned, as the compiler rendered it for the declared one, so the tool does
    not advertise the shape that was overridden."""
    import jinja2

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
    out = {"format": fmt, "instructions": instructions, "example": example}
    return env.from_string(template).render(output=out, tool=tool).strip()
