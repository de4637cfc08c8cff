"""Confinement of writes against a real workspace: symlinks, patterns,
working directories with blanks, and the case rules of the file system."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from charter.runtime.policy import workspace as ws_mod
from charter.runtime.policy.workspace import case_insensitive, confine
from charter.runtime.shell import ShellPolicy, evaluate


def _v(command: str, ws: Path, cwd: Path | None = None):  # type: ignore[no-untyped-def]
    return evaluate(command, cwd=cwd or ws, workspace=ws, policy=ShellPolicy())


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "notes.txt").write_text("x\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "old.txt").write_text("")
    os.symlink(tmp_path / "outside", root / "link")
    return root


@pytest.mark.parametrize(
    "command",
    [
        "cp notes.txt link/",
        "mv notes.txt link/x",
        "rm link/f",
        "tee link/f < notes.txt",
        "rm -f l*/old.txt",  # the pattern matches link/old.txt
        "cd link && touch f",
        "cd -P link/.. && touch f",
        "dd if=notes.txt of=link/f",
        "find link -delete",
    ],
)
def test_a_symlink_in_the_workspace_does_not_lead_writes_out(ws: Path, command: str) -> None:
    v = _v(command, ws)
    assert (v.decision, v.rule) == ("deny", "write-outside-workspace"), v.message


def test_writes_are_resolved_and_listed(ws: Path) -> None:
    v = _v("cp notes.txt src/copy.txt; rm -f notes.txt", ws)
    real = os.path.realpath(ws)
    assert [(w.path, w.inside_workspace) for w in v.writes] == [
        (f"{real}/src/copy.txt", True),
        (f"{real}/notes.txt", True),
    ]


def test_an_unquoted_working_directory_with_a_blank_is_not_a_name(tmp_path: Path) -> None:
    ws = tmp_path / "my project"
    ws.mkdir()
    # unquoted, the shell splits $PWD at the blank: `rm /…/my` and `project/x`
    assert _v("rm -f $PWD/x", ws).rule == "unnameable-write"
    assert _v('rm -f "$PWD/x"', ws).rule == "file-delete"
    assert _v('rm -f "$PWD/../x"', ws).rule == "write-outside-workspace"


def test_case_insensitivity_is_found_out(tmp_path: Path) -> None:
    d = tmp_path / "probe"
    d.mkdir()
    (d / "Name").write_text("")
    # whatever this machine's file system does, the answer is what it does
    assert case_insensitive(str(d)) == (d / "nAME").exists()
    # nothing to look at: the stricter reading
    assert case_insensitive(str(tmp_path / "missing")) is True


@pytest.mark.parametrize("fold", [False, True])
def test_protected_names_fold_only_where_case_is_ignored(
    ws: Path, monkeypatch: pytest.MonkeyPatch, fold: bool
) -> None:
    monkeypatch.setattr(ws_mod, "case_insensitive", lambda root: fold)
    import charter.runtime.shell.guard.confine as guard_confine

    monkeypatch.setattr(guard_confine, "case_insensitive", lambda root: fold)
    shell = _v("echo x > .GIT/config", ws)
    tool = confine(ws, ".Charter/x", op="write")
    if fold:
        assert shell.rule == "vcs-internal-write"
        assert (tool.decision, tool.rule) == ("deny", "path-run-records")
    else:
        assert shell.rule == "redirect-write"
        assert (tool.decision, tool.rule) == ("allow", "path-inside")
    # the exact spellings are protected either way
    assert _v("echo x > .git/config", ws).rule == "vcs-internal-write"
    assert confine(ws, ".charter/x", op="write").rule == "path-run-records"
