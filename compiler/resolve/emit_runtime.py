"""What the runtime needs to decide a call, pinned into the plan.

The runtime decides every call from the plan alone: it never opens the
built-in catalog (``compiler/catalog/data/builtin_tools.json``) at decision time. So
each fact of the catalog that a decision depends on is copied into the plan
here, once, when compiling, and a newer catalog changes nothing about a plan
already written and reviewed:

- a built-in tool's other names (``bash`` for ``shell``), which arguments
  name workspace paths, which argument guard reads its calls (the shell
  guard, the URL policy, the delegate check), and whether its schema is the
  catalog's own (checked by the catalog's tests, so the runtime skips the
  meta-schema check), and the description template of one whose
  description shows the stage's answer shape (submit_output);
- per stage, what a file written by a shell command answers to when the
  session does not offer write_file: the catalog's default for write_file.
"""

from __future__ import annotations

from charter.compiler.catalog.builtin import BuiltinTool, Risk, default_permission
from charter.compiler.resolve.describe import shows_answer_shape
from charter.runtime.plan import Permission, SourceRef, ToolEntry

__all__ = ["builtin_entry", "redirect_write"]


def builtin_entry(
    tool: BuiltinTool,
    *,
    description: str,
    risk: Risk | None = None,
    origin: SourceRef | None = None,
    pin_template: bool = True,
) -> ToolEntry:
    """The plan entry of a built-in tool: the catalog's facts about it, with
    the description rendered for the target and the risk the agent raised.

    ``pin_template`` False (a compile that renders no description, as
    ``charter validate``'s) pins no description template: nothing renders
    one from such a plan, and deciding which templates read the answer
    shape parses them with jinja2, the largest library validate would
    otherwise load."""
    return ToolEntry(
        name=tool.name,
        source="builtin",
        impl=tool.impl,
        description=description,
        input_schema=tool.input_schema,
        input_rules=tool.input_rules,
        capability=tool.capability,
        risk=risk if risk is not None else tool.risk,
        blocks_on_person=tool.blocks_on_person,
        counts_as_work=tool.counts_as_work,
        outbound=tool.outbound,
        host_only=tool.host_only,
        origin=origin,
        aliases=tool.aliases,
        path_args=tool.path_args,
        guard=tool.guard,
        schema_trusted=True,
        # Pinned only where the description depends on the answer shape,
        # which a parent may override at run time.
        description_template=(
            tool.description_template
            if pin_template and shows_answer_shape(tool.description_template)
            else None
        ),
    )


def redirect_write() -> Permission:
    """What a file a shell command writes answers to in a stage whose
    session does not offer write_file: the built-in default for write_file."""
    return default_permission("write_file")
