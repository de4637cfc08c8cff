"""Tool descriptions, rendered once at compile time with jinja2.

The shell tool names the shell the target platform resolves, submit_output
carries the stage's declared format, instructions and example, and a stage
that offers the shell on Windows gets a short hint block.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from charter.compiler.catalog.builtin import BuiltinTool, shell_hint

if TYPE_CHECKING:
    import jinja2

__all__ = ["render_description", "shell_hint_block", "shows_answer_shape"]


@cache
def _env() -> jinja2.Environment:
    import jinja2

    # StrictUndefined: a template naming a value we do not pass is a bug to
    # surface, not an empty string to ship to the model.
    return jinja2.Environment(
        undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=False
    )


def render_description(
    tool: BuiltinTool,
    *,
    shell: str,
    platform: str,
    output: Any = None,
    shell_timeout_secs: int = 60,
) -> str:
    out = {
        "format": getattr(output, "format", None),
        "instructions": getattr(output, "instructions", None),
        "example": getattr(output, "example", None),
    }
    return _render(
        tool.description_template,
        tool.name,
        shell,
        platform,
        tuple(out.items()),
        shell_timeout_secs,
    )


@cache
def _render(
    template: str,
    tool: str,
    shell: str,
    platform: str,
    output: tuple[tuple[str, Any], ...],
    shell_timeout_secs: int,
) -> str:
    # Many agents offer the same tools on the same platform: compile and
    # render each distinct template and context once per process.
    compiled = _env().from_string(template)
    return compiled.render(
        shell=shell,
        platform=platform,
        output=dict(output),
        tool=tool,
        shell_timeout_secs=shell_timeout_secs,
    ).strip()


@cache
def shows_answer_shape(template: str) -> bool:
    """Whether a description template reads the stage's answer shape
    (``output``), which a parent may override at run time."""
    if "output" not in template:  # most templates: no parse needed
        return False
    from jinja2 import meta

    return "output" in meta.find_undeclared_variables(_env().parse(template))


def shell_hint_block(platform: str) -> str | None:
    """The extra system block for a stage offering the shell, if any."""
    return shell_hint(platform)
