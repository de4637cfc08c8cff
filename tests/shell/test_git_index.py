"""The guard's reading of git's index (``charter.runtime.shell.gitindex``)
against ``git ls-files``, and ``git diff`` of a repository that tracks a
credential (git prints its changes whatever the working directory)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from charter.runtime.shell import ShellPolicy, evaluate
from charter.runtime.shell.gitindex import find_git_dir, tracked_paths

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

NAMES = ["a.txt", "src/app/main.py", "src/app/mainline.py", "src/b", "deep/x/y/z/w.txt", "é.txt"]


def _git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-c", "core.quotepath=off", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout


def _repo(tmp_path: Path, names: list[str]) -> Path:
    repo = tmp_path / "ws"
    repo.mkdir()
    _git(repo, "init", "-q")
    for name in names:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text("x\n")
    _git(repo, "add", "-f", "--", *names)
    return repo


@pytest.mark.parametrize("version", ["2", "3", "4"])
def test_index_lists_what_git_lists(tmp_path: Path, version: str) -> None:
    repo = _repo(tmp_path, NAMES)
    _git(repo, "update-index", "--index-version", version)
    if version == "3":
        _git(repo, "update-index", "--skip-worktree", "a.txt")  # an extended entry
    found = find_git_dir(str(repo))
    assert found is not None
    assert tracked_paths(found[1]) == _git(repo, "ls-files", "-z").split("\0")[:-1]


def test_unreadable_index_is_none(tmp_path: Path) -> None:
    repo = _repo(tmp_path, NAMES)
    index = repo / ".git" / "index"
    index.write_bytes(index.read_bytes()[:40])
    assert tracked_paths(str(repo / ".git")) is None


@pytest.mark.parametrize("name", ["index", "config", "commondir"])
def test_a_fifo_in_the_git_folder_is_not_waited_on(tmp_path: Path, name: str) -> None:
    # Opening a FIFO for reading waits for a writer: a repository planted with
    # one would hang every decision about `git diff` or `git remote -v`.
    repo = _repo(tmp_path, [*NAMES, ".env"])
    target = repo / ".git" / name
    target.unlink(missing_ok=True)
    os.mkfifo(target)
    ws = str(repo)
    # what the guard cannot read is what it asks about (the index: `git diff`
    # may print the tracked .env; the config and commondir: a remote URL may
    # hold a token)
    command = "git diff" if name == "index" else "git remote -v"
    v = evaluate(command, cwd=ws, workspace=ws, policy=ShellPolicy())
    assert v.decision == "ask", (command, v.rule)


def _verdict(command: str, cwd: Path, ws: Path) -> tuple[str, str]:
    v = evaluate(command, cwd=str(cwd), workspace=str(ws), policy=ShellPolicy())
    return v.decision, v.rule


@pytest.mark.parametrize("command", ["git diff", "git diff -- src", "git diff-files -p"])
def test_diff_of_a_tracked_credential_asks(tmp_path: Path, command: str) -> None:
    repo = _repo(tmp_path, ["src/main.py", "config/.env"])
    # from a subdirectory too: git diff shows the whole repository's changes
    assert _verdict(command, repo / "src", repo) == ("ask", "credential-path")


def test_diff_with_an_untracked_credential_is_read_only(tmp_path: Path) -> None:
    repo = _repo(tmp_path, ["src/main.py"])
    (repo / ".env").write_text("TOKEN=x\n")
    assert _verdict("git diff", repo, repo) == ("allow", "read-only")
    assert _verdict("git diff-files", repo, repo) == ("allow", "read-only")


def test_unreadable_index_walks_the_workspace(tmp_path: Path) -> None:
    repo = _repo(tmp_path, ["src/main.py"])
    (repo / ".env").write_text("TOKEN=x\n")
    (repo / ".git" / "index").write_bytes(b"DIRC\0\0\0\x09garbage" + b"\0" * 20)
    assert _verdict("git diff", repo, repo) == ("ask", "credential-path")


@pytest.mark.parametrize(
    ("url", "decision"),
    [
        ("https://user:ghp_token@github.com/o/r.git", "ask"),
        ("https://ghp_token@github.com/o/r.git", "ask"),
        ("https://github.com/o/r.git", "allow"),
        ("git@github.com:o/r.git", "allow"),
        ("ssh://git@github.com/o/r.git", "allow"),
    ],
)
def test_remote_urls_with_a_token_are_a_credential(tmp_path: Path, url: str, decision: str) -> None:
    # git remote -v prints the URL as stored, token and all
    repo = _repo(tmp_path, ["a.txt"])
    _git(repo, "remote", "add", "origin", url)
    for command in ("git remote -v", "git remote get-url origin"):
        expected = ("ask", "credential-path") if decision == "ask" else ("allow", "read-only")
        assert _verdict(command, repo, repo) == expected
    assert _verdict("git remote", repo, repo) == ("allow", "read-only")
