"""skills_list, skill_view and skill_manage: confinement to the skills root
(path cases as data in tests/fixtures/skills/paths.txt) and the lifecycle."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from charter.runtime.redact import Redactor
from charter.runtime.results import ToolResult
from charter.runtime.tools.registry import ToolRuntime, dispatch

CASES = Path(__file__).resolve().parents[1] / "fixtures" / "skills" / "paths.txt"
NOTES_CORE = Path(__file__).resolve().parents[2] / "blueprints" / "notes-core"

SKILL = """---
name: deploy
description: How to ship a release.
category: ops
---
# Deploy

Run the checks, then tag.
"""


@pytest.fixture
def rt(tmp_path: Path) -> ToolRuntime:
    ws = tmp_path / "ws"
    root = ws / "agent" / "skills"
    root.mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    return ToolRuntime(workspace=ws, skills_root=root, redactor=Redactor())


@pytest.fixture
def with_skill(rt: ToolRuntime) -> ToolRuntime:
    res = dispatch("skill_manage", {"action": "create", "name": "deploy", "content": SKILL}, rt)
    assert res.ok, res.content
    return rt


def _cases() -> list[Any]:
    out = []
    for line in CASES.read_text().splitlines():
        if line and not line.startswith("#"):
            path, expected = line.split("\t")
            out.append(pytest.param(path, expected, id=path))
    return out


@pytest.mark.parametrize(("file_path", "expected"), _cases())
def test_support_file_paths(with_skill: ToolRuntime, file_path: str, expected: str) -> None:
    rt = with_skill
    assert rt.skills_root is not None
    before = sorted(p for p in rt.workspace.parent.rglob("*"))
    res = dispatch(
        "skill_manage",
        {"action": "write_file", "name": "deploy", "file_path": file_path, "file_content": "x"},
        rt,
    )
    if expected == "ok":
        assert res.ok, res.content
        assert (rt.skills_root / "deploy" / file_path).read_text() == "x"
        return
    assert (res.status, res.rule) == ("denied", "skill-path-refused"), res.content
    assert expected in res.content
    assert sorted(p for p in rt.workspace.parent.rglob("*")) == before  # nothing written
    # The same path is refused for reading, patching and removing too.
    for args in (
        {"action": "remove_file"},
        {"action": "patch", "old_string": "a", "new_string": "b"},
    ):
        again = dispatch("skill_manage", {"name": "deploy", "file_path": file_path, **args}, rt)
        if file_path == "SKILL.md" and args["action"] == "patch":
            continue  # patching SKILL.md itself is allowed
        assert again.rule == "skill-path-refused"
    if file_path != "SKILL.md":
        view = dispatch("skill_view", {"name": "deploy", "file_path": file_path}, rt)
        assert view.rule == "skill-path-refused"


def test_links_out_of_the_skill_are_refused(with_skill: ToolRuntime, tmp_path: Path) -> None:
    rt = with_skill
    assert rt.skills_root is not None
    skill = rt.skills_root / "deploy"
    (skill / "references").mkdir()
    (skill / "references" / "out").symlink_to(tmp_path / "outside")
    (tmp_path / "outside" / "secret.txt").write_text("TOPSECRET-CONTENT")
    write = dispatch(
        "skill_manage",
        {
            "action": "write_file",
            "name": "deploy",
            "file_path": "references/out/x.md",
            "file_content": "x",
        },
        rt,
    )
    assert write.rule == "skill-path-refused" and not (tmp_path / "outside" / "x.md").exists()
    view = dispatch("skill_view", {"name": "deploy", "file_path": "references/out/secret.txt"}, rt)
    assert view.rule == "skill-path-refused" and "TOPSECRET" not in view.content
    # A skill folder that is itself a link out of the root is refused.
    (rt.skills_root / "evil").symlink_to(tmp_path / "outside")
    (tmp_path / "outside" / "SKILL.md").write_text("x")
    for res in (
        dispatch("skill_view", {"name": "evil"}, rt),
        dispatch("skill_manage", {"action": "delete", "name": "evil"}, rt),
    ):
        assert res.rule == "skill-outside-root"
    assert (tmp_path / "outside" / "SKILL.md").exists()
    assert "evil" not in dispatch("skills_list", {}, rt).content
    for name in ("..", ".hidden", "a/b", "/abs"):
        bad = dispatch("skill_view", {"name": name}, rt)
        assert (bad.status, bad.rule) == ("invalid", "skill-bad-name")


def test_skill_lifecycle(with_skill: ToolRuntime) -> None:
    rt = with_skill
    assert rt.skills_root is not None
    listed = dispatch("skills_list", {}, rt)
    assert listed.content == "deploy [ops]: How to ship a release."
    assert dispatch("skills_list", {"category": "docs"}, rt).content == (
        "(no skills in category 'docs')"
    )

    def manage(action: str, **args: Any) -> ToolResult:  # skill_manage, on "deploy" unless named
        return dispatch("skill_manage", {"action": action, "name": "deploy", **args}, rt)

    dup = manage("create", content="x")
    assert dup.rule == "skill-exists"
    missing = manage("update", name="nope", content="x")
    assert missing.rule == "skill-unknown"
    checks = "references/checks.md"
    wrote = manage("write_file", file_path=checks, file_content="lint\nlint\ntest\n")
    assert wrote.ok and "next call" in wrote.content
    view = dispatch("skill_view", {"name": "deploy"}, rt)
    assert view.content.startswith("---\nname: deploy") and "references/checks.md" in view.content
    ambiguous = manage("patch", file_path=checks, old_string="lint", new_string="ruff")
    assert ambiguous.rule == "skill-patch-ambiguous"
    patched = manage(
        "patch", file_path=checks, old_string="lint", new_string="ruff", replace_all=True
    )
    assert patched.ok
    got = dispatch("skill_view", {"name": "deploy", "file_path": "references/checks.md"}, rt)
    assert got.content == "ruff\nruff\ntest\n"
    md = manage("patch", old_string="then tag", new_string="then ship")
    assert md.ok and "then ship" in (rt.skills_root / "deploy" / "SKILL.md").read_text()
    upd = manage("update", content="# v2\n")
    assert upd.ok and dispatch("skills_list", {}, rt).content == "deploy: (no description)"
    removed = manage("remove_file", file_path=checks)
    assert removed.ok and not (rt.skills_root / "deploy" / "references" / "checks.md").exists()
    assert manage("delete").ok
    assert not (rt.skills_root / "deploy").exists()
    assert dispatch("skills_list", {}, rt).content == "(no skills)"
    assert not [p for p in rt.skills_root.iterdir()]  # no temporary files left behind


def test_without_a_skills_root_nothing_is_touched(tmp_path: Path) -> None:
    rt = ToolRuntime(workspace=tmp_path, redactor=Redactor())
    for tool, args in (
        ("skills_list", {}),
        ("skill_view", {"name": "x"}),
        ("skill_manage", {"action": "create", "name": "x", "content": "y"}),
    ):
        res = dispatch(tool, args, rt)
        assert (res.status, res.rule) == ("unavailable", "skills-root-missing")
    assert not list(tmp_path.iterdir())


def test_skill_manage_asks_as_an_fs_write_tool(tmp_path: Path) -> None:
    from charter.compiler.compile import CompileOptions, compile_project
    from charter.compiler.frontends.project import load_project
    from charter.runtime.gates import decide
    from charter.runtime.policy.session import open_session
    from charter.runtime.results import ToolCall

    root = tmp_path / "notes"
    shutil.copytree(NOTES_CORE, root)
    plan = compile_project(load_project(root), CompileOptions()).plan
    assert plan is not None
    entry = plan.body.agents[0].tool("skill_manage")
    assert entry is not None and entry.capability == "fs.write"
    session = open_session(plan, "notes-core", workspace=tmp_path)
    out = decide(session, ToolCall("skill_manage", {"action": "delete", "name": "x"}))
    assert (out.decision, out.gate) == ("ask", "approval")


def test_a_skill_file_that_is_a_fifo_is_refused_not_waited_on(with_skill: ToolRuntime) -> None:
    # A FIFO's size is 0 and its open waits for a writer: a planted one held
    # skill_view forever.
    import os

    assert with_skill.skills_root is not None
    os.mkfifo(with_skill.skills_root / "deploy" / "notes.md")
    view = dispatch("skill_view", {"name": "deploy", "file_path": "notes.md"}, with_skill)
    assert (view.ok, view.rule) == (False, "skill-path-refused")
    (with_skill.skills_root / "piped").mkdir()
    os.mkfifo(with_skill.skills_root / "piped" / "SKILL.md")
    view = dispatch("skill_view", {"name": "piped"}, with_skill)
    assert (view.ok, view.rule) == (False, "skill-unknown")
