"""A Demiurge core's SOUL.md: the text its host puts first in every system
prompt. As Demiurge's loader does, the file ``slots.soul`` names is read,
then ``<surface_root>/SOUL.md``; the same file is read once, each text is
stripped, and the texts are joined by a blank line. The plan carries the
result, so the runtime reads no file for it.
"""

from __future__ import annotations

from pathlib import Path

from charter.compiler.resolve.context import AgentContext
from charter.compiler.sources.text import read_source

__all__ = ["core_soul"]


def core_soul(ctx: AgentContext, project_root: Path) -> str | None:
    core = ctx.core
    if core is None:
        return None
    base = project_root / ctx.agent.directory
    prefix = "" if ctx.agent.directory == "." else ctx.agent.directory + "/"
    names: list[str] = []
    if core.slots.soul:
        names.append(core.slots.soul.strip("/"))
    surface = core.runtime.surface_root.strip("/")
    names.append(f"{surface}/SOUL.md" if surface and surface != "." else "SOUL.md")
    parts: list[str] = []
    seen: set[Path] = set()
    for name in names:
        path = base / name
        key = path.resolve()
        if key in seen or not path.is_file():
            continue
        seen.add(key)
        src, problems = read_source(path, prefix + name)
        if src is None:
            ctx.diags.extend(problems)  # the reader says what is wrong with the file
            continue
        if src.text.strip():
            parts.append(src.text.strip())
    return "\n\n".join(parts) or None
