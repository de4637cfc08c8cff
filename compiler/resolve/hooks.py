"""The Rhai scripts a stage names: its hooks (``[stages.<name>.hooks]``)
and its output validator. Each named file is read, compiled by Charter's
interpreter and checked to define its function with one parameter, then
carried in the plan with its text.

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
from charter.runtime.plan import ScriptSource, StageHook

__all__ = ["output_validator", "stage_hooks"]


def _load(
    ctx: AgentContext,
    entry: StageEntry,
    project_root: Path,
    key: tuple[str, ...],
    value: str,
    what: str,
    function: str,
) -> ScriptSource | None:
    """Read, compile and check one script a stage names; a diagnostic at
    the key that names it for each problem."""
    from charter.runtime.rhai import RhaiSyntaxError, parse_script

    span = entry.span(*key)

    def refuse(why: str) -> None:
        ctx.diags.append(
            diag("stage-script-invalid", f"stage '{entry.name}': the {what} {why}", span)
        )

    rel = Path(value)
    if rel.is_absolute() or ".." in rel.parts:
        refuse(f"names {value!r}, which is not a file inside the agent's folder")
        return None
    path = project_root / ctx.agent.directory / rel
    display = (Path(ctx.agent.directory) / rel).as_posix()
    if not path.is_file():
        refuse(f"names {display!r}, which does not exist")
        return None
    src, problems = read_source(path, display)
    if src is None:
        refuse(f"script {display!r} cannot be read: {'; '.join(d.message for d in problems)}")
        return None
    try:
        script = parse_script(src.text, display)
    except RhaiSyntaxError as exc:
        refuse(f"script does not compile: {exc}")
        return None
    arities = [n for (name, n) in script.functions if name == function]
    if arities != [1]:
        found = f"fn {function} with {arities[0]} parameters" if arities else f"no fn {function}"
        refuse(f"script {display!r} must define fn {function} with one parameter; it has {found}")
        return None
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return ScriptSource(path=display, sha256=digest, source=src.text)


def stage_hooks(ctx: AgentContext, entry: StageEntry, project_root: Path) -> tuple[StageHook, ...]:
    """The stage's hooks, in the order they are declared."""
    hooks = entry.stage.hooks
    if hooks is None:
        return ()
    out: list[StageHook] = []
    for hook, value in hooks.model_dump(exclude_none=True).items():
        loaded = _load(ctx, entry, project_root, ("hooks", hook), str(value), f"{hook} hook", hook)
        if loaded is not None:
            out.append(StageHook(hook=hook, **loaded.model_dump()))
    return tuple(out)


def output_validator(
    ctx: AgentContext, entry: StageEntry, project_root: Path
) -> ScriptSource | None:
    """The stage's output validator (``[stages.<name>.output] validator``),
    which must define ``fn validate(content)``."""
    output = entry.stage.output
    if output is None or output.validator is None:
        return None
    return _load(
        ctx,
        entry,
        project_root,
        ("output", "validator"),
        output.validator,
        "output validator",
        "validate",
    )
