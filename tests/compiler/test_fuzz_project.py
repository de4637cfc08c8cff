"""Mutated copies of the shipped examples: loading, compiling and linting
them yields diagnostics, never an exception."""

from __future__ import annotations

import shutil
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from charter.compiler.check import check_project
from charter.compiler.frontends.project import load_project

REPO = Path(__file__).resolve().parents[2]
FILES = [
    "coder/agent.leviath",
    "coder/stages/review.toml",
    "notes-core/agent.yaml",
    "notes-core/agent/tools/project_note/tool.yaml",
    "notes-core/agent/mcp/docs.yaml",
]
NASTY = [
    "",
    "\x00",
    "'",
    '"',
    "[",
    "]",
    "{",
    "}",
    ":",
    "=",
    "\n",
    "  ",
    "*x",
    "&a",
    "!!str",
    "é",
    "deny",
    "dney",
    "\u202e",
    "shell",
    "bash",
    "~",
    "../",
    "yes",
]


@st.composite
def mutation(draw: st.DrawFn) -> tuple[str, str]:
    rel = draw(st.sampled_from(FILES))
    text = (REPO / "blueprints" / rel).read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    kind = draw(st.sampled_from(["delete", "duplicate", "insert", "truncate", "swap"]))
    i = draw(st.integers(0, max(0, len(lines) - 1)))
    if kind == "delete" and lines:
        del lines[i]
    elif kind == "duplicate" and lines:
        lines.insert(i, lines[i])
    elif kind == "insert":
        lines.insert(i, draw(st.sampled_from(NASTY)) + draw(st.text(max_size=20)) + "\n")
    elif kind == "truncate":
        return rel, text[: draw(st.integers(0, len(text)))]
    elif kind == "swap" and lines:
        line = lines[i]
        j = draw(st.integers(0, max(0, len(line) - 1)))
        lines[i] = line[:j] + draw(st.sampled_from(NASTY)) + line[j + 1 :]
    return rel, "".join(lines)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(change=mutation())
def test_mutated_examples_only_produce_diagnostics(
    tmp_path_factory: object, change: tuple[str, str]
) -> None:
    import tempfile

    rel, text = change
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "blueprints"
        shutil.copytree(REPO / "blueprints", root, ignore=shutil.ignore_patterns("__pycache__"))
        (root / rel).write_text(text, encoding="utf-8")
        project = load_project(root, use_default_config=False)
        diags = check_project(project)
        for d in (*project.diagnostics, *diags):
            assert d.span.line >= 1 and d.span.col >= 1
            assert d.code.startswith("CH")
