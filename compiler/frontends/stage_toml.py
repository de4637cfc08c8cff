"""Stage files: one stage per ``stages/<name>.toml`` beside a blueprint.

The stage's name is the file's stem and the file's top level holds exactly
the keys a ``[stages.<name>]`` table would (edges included, in either shape),
so moving a stage out of ``agent.leviath`` is a cut and paste that drops the
``stages.<name>`` prefix.

A stage defined both inline and in a file is an error rather than a merge:
which copy wins would otherwise depend on load order. :func:`combine_stages`
builds the single stage table the compiler works from, remembering for each
stage the file and key path it came from so later diagnostics can point at
it; :func:`merge_stages` returns only the diagnostics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from charter.compiler.diagnostics import Diagnostic, Span
from charter.compiler.frontends.base import Loaded, load_document
from charter.compiler.frontends.blueprint import (
    Blueprint,
    StageTable,
    check_stage,
    explain_misplaced,
)
from charter.compiler.rules import diag
from charter.compiler.sources.sourcemap import KeyPath, SourceMap

__all__ = [
    "StageEntry",
    "combine_stages",
    "load_stage_file",
    "merge_stages",
    "stage_file_name",
]


def stage_file_name(display: str) -> str:
    """The stage a file defines: its stem (``stages/review.toml`` -> review)."""
    return PurePosixPath(display.replace("\\", "/")).stem


def load_stage_file(path: Path, display: str) -> Loaded[StageTable]:
    def postcheck(stage: StageTable, smap: SourceMap) -> list[Diagnostic]:
        return check_stage(stage, smap, ())

    loaded = load_document(path, display, StageTable, "toml", postcheck=postcheck)
    fixed = explain_misplaced(loaded.diagnostics, stage_file=True)
    return loaded._replace(diagnostics=tuple(fixed))


@dataclass(frozen=True)
class StageEntry:
    """One stage of the combined table and where it was written."""

    name: str
    stage: StageTable
    display: str  # the file holding it
    smap: SourceMap = field(repr=False)  # that file's source map
    prefix: KeyPath = ()  # the stage's table inside that file: ("stages", name) or ()

    def span(self, *path: str | int, key: bool = False) -> Span:
        """The position of ``path`` (relative to the stage's table)."""
        full = (*self.prefix, *path)
        return self.smap.key_span(full) if key else self.smap.value_span(full)


def _where(span: Span) -> str:
    return f"{span.path}:{span.line}:{span.col}"


def combine_stages(
    blueprint: Loaded[Blueprint], stage_files: list[Loaded[StageTable]]
) -> tuple[dict[str, StageEntry], list[Diagnostic]]:
    """One stage table: the blueprint's inline stages in the order written,
    then stage files in file-name order. A name defined twice keeps its
    first definition and reports the second, naming both places. Files or
    blueprints that did not validate contribute nothing (their own
    diagnostics already say why), but a stage file whose name collides is
    still reported."""
    table: dict[str, StageEntry] = {}
    diags: list[Diagnostic] = []
    first_at: dict[str, Span] = {}

    bp = blueprint.model
    raw_stages = blueprint.raw.get("stages") if isinstance(blueprint.raw, dict) else None
    if isinstance(raw_stages, dict):
        # Positions come from the raw data so a collision is reported even
        # when the inline stage itself did not validate.
        for name in raw_stages:
            first_at[name] = blueprint.smap.key_span(("stages", name))
    if bp is not None:
        for name, stage in bp.stages.items():
            table[name] = StageEntry(
                name, stage, blueprint.display, blueprint.smap, ("stages", name)
            )

    for loaded in sorted(stage_files, key=lambda f: f.display):
        name = stage_file_name(loaded.display)
        here = Span(loaded.display, 1, 1)
        if name in first_at:
            there = first_at[name]
            diags.append(
                diag(
                    "duplicate-definition",
                    f"stage '{name}' is defined twice: here and at {_where(there)}",
                    here,
                    key_path=name,
                    help=f"keep either [stages.{name}] in {there.path} or this file, not both",
                    data={"first": _where(there), "second": _where(here)},
                )
            )
            continue
        first_at[name] = here
        if loaded.model is not None:
            table[name] = StageEntry(name, loaded.model, loaded.display, loaded.smap, ())
    return table, diags


def merge_stages(
    blueprint: Loaded[Blueprint], stage_files: list[Loaded[StageTable]]
) -> list[Diagnostic]:
    """The diagnostics of :func:`combine_stages`: each stage defined twice."""
    return combine_stages(blueprint, stage_files)[1]
