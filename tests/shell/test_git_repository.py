"""Class 5 with a real git: a workspace laid out as a bare repository whose
config sets diff.external. Without Charter's environment git takes the
workspace for a repository and runs the helper; with it (and with the guard
asking first) the helper never runs."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from charter.runtime.policy.env import GIT_SAFETY, build_env
from charter.runtime.shell import ShellPolicy, evaluate
from charter.runtime.shell.gitrepo import untrusted_repository

GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(GIT is None, reason="git is not installed")


def _git_version() -> tuple[int, int]:
    assert GIT is not None
    out = subprocess.run([GIT, "--version"], capture_output=True, text=True, check=True).stdout
    major, minor = out.split()[2].split(".")[:2]
    return int(major), int(minor)


def _bare_layout(ws: Path) -> Path:
    ws.mkdir()
    subprocess.run([GIT, "init", "-q", "--bare", str(ws)], check=True)
    marker = ws.parent / "PWNED"
    with (ws / "config").open("a") as f:
        f.write(f"[diff]\n\texternal = sh -c 'touch {marker}' --\n")
    (ws / "a").write_text("one\n")
    (ws / "b").write_text("two\n")
    return marker


def _run(ws: Path, env: dict[str, str]) -> None:
    assert GIT is not None
    subprocess.run(
        [GIT, "diff", "--no-index", "a", "b"], cwd=ws, env=env, capture_output=True, check=False
    )


def test_the_bare_layout_really_runs_diff_external(tmp_path: Path) -> None:
    # the attack is real: plain git runs the helper from ./config
    ws = tmp_path / "ws"
    marker = _bare_layout(ws)
    _run(ws, {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)})
    assert marker.exists()


def test_charter_s_environment_stops_git_using_the_bare_layout(tmp_path: Path) -> None:
    if _git_version() < (2, 38):
        pytest.skip("safe.bareRepository needs git 2.38 or later")
    ws = tmp_path / "ws"
    marker = _bare_layout(ws)
    (tmp_path / "home").mkdir()
    env = build_env(os.environ, home=tmp_path / "home")
    assert all(env[k] == v for k, v in GIT_SAFETY.items())
    _run(ws, env)
    assert not marker.exists()
    # and a real .git directory still works under the same environment
    repo = tmp_path / "repo"
    subprocess.run([GIT, "init", "-q", str(repo)], check=True, env=env)
    res = subprocess.run([GIT, "status", "--short"], cwd=repo, env=env, capture_output=True)
    assert res.returncode == 0


def test_the_guard_asks_before_git_runs_in_the_bare_layout(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _bare_layout(ws)
    for command in ("git diff --no-index a b", "git status", "git log --stat"):
        v = evaluate(command, cwd=ws, workspace=ws, policy=ShellPolicy())
        assert (v.decision, v.rule) == ("ask", "untrusted-repository"), command
    assert evaluate("diff a b", cwd=ws, workspace=ws, policy=ShellPolicy()).decision == "allow"


def test_a_linked_worktree_and_a_repository_above_the_workspace_are_trusted(tmp_path: Path) -> None:
    assert GIT is not None
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    main = tmp_path / "main"
    subprocess.run([GIT, "init", "-q", str(main)], check=True, env=env)
    subprocess.run(
        [
            GIT,
            "-C",
            str(main),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
        check=True,
        env=env,
    )
    wt = tmp_path / "wt"
    subprocess.run([GIT, "-C", str(main), "worktree", "add", "-q", str(wt)], check=True, env=env)
    assert (wt / ".git").is_file()
    assert untrusted_repository(str(wt), os.path.realpath(wt)) is None
    sub = main / "pkg"
    sub.mkdir()
    assert untrusted_repository(str(sub), os.path.realpath(sub)) is None
    v = evaluate("git status", cwd=sub, workspace=sub, policy=ShellPolicy())
    assert v.decision == "allow"


def test_no_repository_at_all_is_fine(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    assert untrusted_repository(str(ws), os.path.realpath(ws)) is None
