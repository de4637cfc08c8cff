"""Discovery past the agent host's global fallback file (``agents/agent.yaml``
holding only model, ui and approval) to the cores below it."""

from __future__ import annotations

from pathlib import Path

import pytest

from charter.compiler.frontends.project import load_project


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
    return root


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
    root = _write(
        tmp_path,
        {"agent.yaml": fallback, "a/agent.yaml": CORE % "a", "team/b/agent.yaml": CORE % "b"},
    )
    project = load_project(root, use_default_config=False)
    assert not [d for d in project.diagnostics if d.is_error], project.diagnostics
    assert sorted(a.name for a in project.agents) == ["a", "b"]
    assert all(
        a.fallback is not None and a.fallback.display == "agent.yaml" for a in project.agents
    )


def test_the_nearest_fallback_above_a_core_applies(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "agent.yaml": "approval: {default: prompt}\n",
            "team/agent.yaml": "approval: {default: deny}\n",
            "team/b/agent.yaml": CORE % "b",
            "a/agent.yaml": CORE % "a",
        },
    )
    by_name = {a.name: a for a in load_project(root, use_default_config=False).agents}
    assert by_name["a"].fallback is not None and by_name["a"].fallback.display == "agent.yaml"
    assert by_name["b"].fallback is not None and by_name["b"].fallback.display == "team/agent.yaml"


def test_a_fallback_shaped_file_with_no_core_below_is_a_core_missing_its_id(
    tmp_path: Path,
) -> None:
    root = _write(tmp_path, {"agent.yaml": "approval: {default: deny}\n", "docs/x.md": "hi\n"})
    project = load_project(root, use_default_config=False)
    [agent] = project.agents
    assert agent.directory == "." and agent.fallback is None
    assert [(d.name, d.span.path) for d in project.diagnostics if d.is_error] == [
        ("missing-key", "agent.yaml")
    ]


def test_a_core_with_a_blueprint_beside_it_is_never_a_fallback(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "agent.yaml": "approval: {default: deny}\n",
            "agent.leviath": '[agent]\nname = "x"\n',
            "a/agent.yaml": CORE % "a",
        },
    )
    project = load_project(root, use_default_config=False)
    assert [a.directory for a in project.agents] == ["."]


def test_an_invalid_fallback_is_reported_where_it_is_wrong(tmp_path: Path) -> None:
    root = _write(
        tmp_path, {"agent.yaml": "approval:\n  default: maybe\n", "a/agent.yaml": CORE % "a"}
    )
    project = load_project(root, use_default_config=False)
    [d] = [d for d in project.diagnostics if d.is_error]
    assert (d.name, d.span.path, d.span.line, d.span.col) == ("invalid-value", "agent.yaml", 2, 12)
