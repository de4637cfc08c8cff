"""The answer shape a stage holds an agent to.

A sub-agent may be asked for another answer shape than its blueprint
declares (``spawn_agent``'s ``output_format`` and ``output_instructions``).
That request replaces the declared shape everywhere the child meets it: in
its system prompt, in the description of ``submit_output``, in the check its
answer must pass, and in the format its result reports.
"""

from __future__ import annotations

from charter.runtime.plan import OutputSpec, Stage

__all__ = ["ends_with_text", "is_output_stage", "output_spec", "overridden"]


def is_output_stage(stage: Stage) -> bool:
    return stage.output is not None or stage.mode == "output"


def ends_with_text(stage: Stage) -> bool:
    """A stage whose answer is the model's reply text (it stops calling tools)."""
    return not is_output_stage(stage) and (stage.allow_complete or not stage.edges)


def _same_format(a: str | None, b: str | None) -> bool:
    return (a or "").strip().lower() == (b or "").strip().lower()


def overridden(base: OutputSpec, asked: OutputSpec) -> OutputSpec:
    """The shape a parent asked for (``spawn_agent``'s ``output_format`` and
    ``output_instructions``) laid over the one the stage declares. What the
    parent said wins; the blueprint's instructions, example and answer schema
    describe the blueprint's own shape, so they are kept only while the
    parent asked for nothing that contradicts them."""
    new_format = asked.format is not None and not _same_format(asked.format, base.format)
    if not new_format and asked.instructions is None:
        return base
    if new_format:
        instructions = asked.instructions
    else:
        instructions = asked.instructions or base.instructions
    return OutputSpec(
        format=asked.format or base.format,
        instructions=instructions,
        # The blueprint's example and schema show its own shape; with another
        # format or other instructions they would contradict the request.
        example=None,
        answer_schema=None,
    )


def output_spec(stage: Stage, asked: OutputSpec | None) -> OutputSpec | None:
    """The answer shape an agent is held to in ``stage``: the stage's own, or
    the one its parent asked for (``asked``). A parent's request also applies
    to a stage whose answer is the reply text, though it declares none."""
    if is_output_stage(stage):
        base = stage.output or OutputSpec()
    elif asked is not None and ends_with_text(stage):
        base = OutputSpec()
    else:
        return stage.output
    return base if asked is None else overridden(base, asked)
