"""The recipes docs/ci.md gives for pre-commit and GitHub Actions, run as written.

The pre-commit hook is run the way pre-commit runs a ``language: python`` hook
(its ``entry`` split as a shell would, then ``args``, then the file names only
when ``pass_filenames`` is true, in the repository root), against a repository
set up by ``charter init``: it must pass there and fail once the policy is
broken. The Actions recipe's ``charter`` steps are run through bash -e, as the
runner runs a ``run:`` step. Nothing here needs the network or pre-commit.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
import yaml

from charter.runtime.version import VERSION

REPO = Path(__file__).resolve().parents[2]
CI_DOC = REPO / "docs" / "ci.md"
POLICY = Path(".charter/policy/assistant/agent.leviath")


def _charter_command() -> list[str]:
    # The console script pip installed beside this interpreter, which is what
    # the hook's environment puts on PATH; `python -m` where there is none.
    script = Path(sysconfig.get_path("scripts")) / "charter"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "charter.compiler"]


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env["HOME"] = str(home)  # no user config of the machine's owner
    env.pop("XDG_CONFIG_HOME", None)
    env["PATH"] = os.pathsep.join([str(Path(_charter_command()[0]).parent), env["PATH"]])
    return env


@pytest.fixture
def initialised(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A repository as `charter init claude-code` leaves it."""
    home = tmp_path / "home"
    home.mkdir()
    root = tmp_path / "repo"
    root.mkdir()
    env = _env(home)
    done = subprocess.run(
        [*_charter_command(), "init", "claude-code", str(root)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (root / POLICY).is_file()
    return root, env


def _hook() -> dict[str, Any]:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    (hook,) = [h for h in hooks if h["id"] == "charter-validate"]
    assert isinstance(hook, dict)
    return hook


def _files_the_hook_sees(hook: dict[str, Any], root: Path) -> list[str]:
    # pre-commit filters `git ls-files` with re.search on `files`, then
    # drops what `exclude` matches (by default nothing).
    files = re.compile(hook.get("files", ""))
    exclude = re.compile(hook.get("exclude", "^$"))
    names = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]
    return sorted(n for n in names if files.search(n) and not exclude.search(n))


def _run_hook(
    hook: dict[str, Any], root: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    argv = [*shlex.split(hook["entry"]), *hook.get("args", [])]
    if hook.get("pass_filenames", True):
        argv += _files_the_hook_sees(hook, root)
    assert argv[0] == "charter", "the hook's entry must be the console script pip installs"
    argv[:1] = _charter_command()
    return subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=120)


def test_the_hook_definition_is_what_pre_commit_needs() -> None:
    hook = _hook()
    for key in ("id", "name", "entry", "language"):
        assert hook.get(key), key
    # `python`: pre-commit pip-installs this repository into the hook's own
    # environment, so the console script named by `entry` exists there.
    assert hook["language"] == "python"
    assert "charter" in (REPO / "pyproject.toml").read_text().split("[project.scripts]")[1]


def test_the_hook_passes_in_an_initialised_repo_and_fails_on_a_broken_policy(
    initialised: tuple[Path, dict[str, str]],
) -> None:
    root, env = initialised
    hook = _hook()
    # The hook only runs when a matching file is staged or --all-files is given.
    assert POLICY.as_posix() in _files_the_hook_sees(hook, root)
    clean = _run_hook(hook, root, env)
    assert clean.returncode == 0, clean.stdout + clean.stderr

    policy = root / POLICY
    policy.write_text(policy.read_text().replace('read_file = "allow"', 'read_file = "alow"'))
    broken = _run_hook(hook, root, env)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert f"{POLICY.as_posix()}:" in broken.stdout and "CH205" in broken.stdout


def test_the_hook_sees_the_shipped_blueprints() -> None:
    seen = _files_the_hook_sees(_hook(), REPO / "blueprints")
    assert "coder/agent.leviath" in seen


def _actions_workflow() -> dict[str, Any]:
    text = CI_DOC.read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    (workflow,) = [b for b in blocks if b.startswith("name: charter")]
    loaded = yaml.safe_load(workflow)
    assert isinstance(loaded, dict)
    return loaded


def _charter_steps() -> list[str]:
    steps = _actions_workflow()["jobs"]["validate"]["steps"]
    runs = [s["run"] for s in steps if "run" in s]
    return [r for r in runs if r.lstrip().startswith("charter ")]


def test_the_recipes_name_a_tag_of_this_version_and_no_unpublished_package() -> None:
    text = CI_DOC.read_text()
    tag = f"v{VERSION}"
    revs = re.findall(r"rev: (\S+)", text)
    assert revs and set(revs) == {tag}
    steps = _actions_workflow()["jobs"]["validate"]["steps"]
    installs = [s["run"] for s in steps if "pip install" in s.get("run", "")]
    assert installs, "the workflow installs Charter"
    for line in installs:
        # charter-policy is not on the package index: a bare name finds nothing.
        assert "git+" in line and line.rstrip().rstrip('"').endswith(f"@{tag}"), line
    for line in re.findall(r"pip install [^\n]*", text):
        assert not re.fullmatch(r"pip install (-\S+ )*charter-policy\s*", line), line


@pytest.mark.skipif(shutil.which("bash") is None, reason="the runner's shell is bash")
def test_the_actions_steps_run_as_written(initialised: tuple[Path, dict[str, str]]) -> None:
    root, env = initialised
    sarif_step, github_step = _charter_steps()

    def step(run: str) -> subprocess.CompletedProcess[str]:
        # The runner's default shell for a run step: bash -e {0}.
        return subprocess.run(
            ["bash", "-e", "-c", run], cwd=root, env={**env, "GITHUB_ACTIONS": "true"},
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    done = step(sarif_step)
    assert done.returncode == 0, done.stderr
    sarif = json.loads((root / "charter.sarif").read_text())
    assert sarif["version"] == "2.1.0"
    assert step(github_step).returncode == 0

    policy = root / POLICY
    policy.write_text(policy.read_text().replace('read_file = "allow"', 'read_file = "alow"'))
    # Findings do not stop the upload step ...
    assert step(sarif_step).returncode == 0
    results = json.loads((root / "charter.sarif").read_text())["runs"][0]["results"]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert POLICY.as_posix() in uris
    # ... the gate fails the job and annotates the line.
    gate = step(github_step)
    assert gate.returncode == 1
    assert f"::error file={POLICY.as_posix()},line=" in gate.stdout
    # A usage or I/O error stops the job before an empty SARIF file is uploaded.
    assert step(sarif_step.replace(" . ", " no-such-dir/ ")).returncode != 0
