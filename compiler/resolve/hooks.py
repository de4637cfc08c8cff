"""A stage's Rhai hooks (``[stages.<name>.hooks]``): each named file read,
compiled by Charter's interpreter and checked to define the hook's function
with one parameter, then carried in the plan with its text.

Leviath refuses such a hook before the agent starts, because a hook that
never runs looks exactly like one that ran and allowed everything; a missing,
unreadable or broken hook script is therefore an error here, and no plan is
written.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from charter.compiler.frontends.stage_toml import StageEntry
from charter.compiler.resolve.context import AgentContext
from charter.compiler.rules import diag
from charter.compiler.sources.text import read_source
from charter.runtime.plan import StageHook

__all__ = ["stage_hooks"]


def stage_hooks(ctx: AgentContext, entry: StageEntry, project_root: Path) -> tuple[StageHook, ...]:
    """The stage's hooks, in the order they are declared; each problem is a
    ``hook-script-invalid`` diagnostic at the key that names the file."""
    from charter.runtime.rhai import RhaiSyntaxError, parse_script

    hooks = entry.stage.hooks
    if hooks is None:
        return ()
    out: list[StageHook] = []
    agent_dir = project_root / ctx.agent.directory
    for hook, value in hooks.model_dump(exclude_none=True).items():
        span = entry.span("hooks", hook)

        def refuse(why: str, hook: str = hook, span: object = span) -> None:
            ctx.diags.append(
                diag(
                    "hook-script-invalid",
                    f"stage '{entry.name}': the {hook} hook {why}",
                    span,  # type: ignore[arg-type]
                )
            )

        rel = Path(str(value))
        if rel.is_absolute() or ".." in rel.parts:
            refuse(f"names {value!r}, which is not a file inside the agent's folder")
            continue
        path = agent_dir / rel
        display = (Path(ctx.agent.directory) / rel).as_posix()
        if not path.is_file():
            refuse(f"names {display!r}, which does not exist")
            continue
        src, problems = read_source(path, display)
        if src is None:
            refuse(f"script {display!r} cannot be read: {'; '.join(d.message for d in problems)}")
            continue
        try:
            script = parse_script(src.text, display)
        except RhaiSyntaxError as exc:
            refuse(f"script does not compile: {exc}")
            continue
        arities = [n for (name, n) in script.functions if name == hook]
        if arities != [1]:
            found = f"fn {hook} with {arities[0]} parameters" if arities else f"no fn {hook}(ctx)"
            refuse(f"script {display!r} must define fn {hook}(ctx), one parameter; it has {found}")
            continue
        out.append(
            StageHook(
                hook=hook,
                path=display,
                sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
                source=src.text,
            )
        )
    return tuple(out)
