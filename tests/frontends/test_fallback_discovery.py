"""Discovery past the agent host's global fallback file (``agents/agent.yaml``
holding only model, ui and approval) to the cores below it."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support.files import write_tree

from charter.compiler.frontends.project import Project, load_project


def _loaded(tmp_path: Path, files: dict[str, str]) -> Project:
    return load_project(write_tree(tmp_path, files), use_default_config=False)


CORE = "agent: {id: %s}\ntools: {toolsets: [coding]}\n"


@pytest.mark.parametrize(
    "fallback",
    [
        "model: {provider: auto}\nui: {tool_display: summary}\napproval: {tools: {}}\n",
        "approval:\n  default: prompt\n",
        "# nothing but a comment: the host reads no settings\n",
        "",
    ],
    ids=["all three keys", "approval only", "comments only", "empty"],
)
def test_a_fallback_file_is_not_a_core_and_discovery_goes_on(tmp_path: Path, fallback: str) -> None:
    project = _loaded(
        tmp_path,
        {"agent.yaml": fallback, "a/agent.yaml": CORE % "a", "team/b/agent.yaml": CORE % "b"},
    )
    assert not [d for d in project.diagnostics if d.is_error], project.diagnostics
    assert sorted(a.name for a in project.agents) == ["a", "b"]
    assert all(
        a.fallback is not None and a.fallback.display == "agent.yaml" for a in project.agents
    )


def test_the_nearest_fallback_above_a_core_applies(tmp_path: Path) -> None:
    project = _loaded(
        tmp_path,
        {
            "agent.yaml": "approval: {default: prompt}\n",
            "team/agent.yaml": "approval: {default: deny}\n",
            "team/b/agent.yaml": CORE % "b",
            "a/agent.yaml": CORE % "a",
        },
    )
    by_name = {a.name: a for a in project.agents}
    assert by_name["a"].fallback is not None and by_name["a"].fallback.display == "agent.yaml"
    assert by_name["b"].fallback is not None and by_name["b"].fallback.display == "team/agent.yaml"


def test_a_fallback_shaped_file_with_no_core_below_is_a_core_missing_its_id(
    tmp_path: Path,
) -> None:
    project = _loaded(tmp_path, {"agent.yaml": "approval: {default: deny}\n", "docs/x.md": "hi\n"})
    [agent] = project.agents
    assert agent.directory == "." and agent.fallback is None
    assert [(d.name, d.span.path) for d in project.diagnostics if d.is_error] == [
        ("missing-key", "agent.yaml")
    ]


def test_a_core_with_a_blueprint_beside_it_is_never_a_fallback(tmp_path: Path) -> None:
    project = _loaded(
        tmp_path,
        {
            "agent.yaml": "approval: {default: deny}\n",
            "agent.leviath": '[agent]\nname = "x"\n',
            "a/agent.yaml": CORE % "a",
        },
    )
    assert [a.directory for a in project.agents] == ["."]


def test_an_invalid_fallback_is_reported_where_it_is_wrong(tmp_path: Path) -> None:
    project = _loaded(
        tmp_path, {"agent.yaml": "approval:\n  default: maybe\n", "a/agent.yaml": CORE % "a"}
    )
    [d] = [d for d in project.diagnostics if d.is_error]
    assert (d.name, d.span.path, d.span.line, d.span.col) == ("invalid-value", "agent.yaml", 2, 12)
