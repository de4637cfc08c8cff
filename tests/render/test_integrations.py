from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent.parent


def _hook() -> dict[str, Any]:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    (hook,) = hooks
    assert isinstance(hook, dict)
    return hook


def test_pre_commit_hook_manifest() -> None:
    hook = _hook()
    assert hook["id"] == "charter-validate"
    assert hook["entry"] == "charter validate"
    assert hook["language"] == "python"
    assert hook["pass_filenames"] is False
    # The entry must be a console script the package installs.
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "scripts"
    ]
    assert hook["entry"].split()[0] in scripts


FILE_CASES = [
    ("agent.yaml", True),
    ("agents/coder/agent.yml", True),
    ("agents/coder/agent/tools/grep/tool.yaml", True),
    ("agents/coder/agent/mcp/git.yaml", True),
    ("blueprints/coder/agent.leviath", True),
    ("blueprints/coder/blueprint.toml", True),
    ("blueprints/coder/stages/plan.toml", True),
    ("config.toml", True),
    ("pyproject.toml", False),
    ("agents/myagent.yaml", False),
    ("agent/mcp/nested/x.yaml", False),
    ("stages/nested/plan.toml", False),
    ("docs/agent.yaml.md", False),
]


@pytest.mark.parametrize(("path", "matches"), FILE_CASES)
def test_pre_commit_files_pattern(path: str, matches: bool) -> None:
    # pre-commit applies `files` with re.search.
    assert bool(re.search(_hook()["files"], path)) is matches


def test_ci_guide_yaml_examples_parse() -> None:
    text = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 3
    for block in blocks:
        assert yaml.safe_load(block)
    workflow = next(yaml.safe_load(b) for b in blocks if "jobs:" in b)
    steps = workflow["jobs"]["validate"]["steps"]
    uses = [s.get("uses", "") for s in steps]
    assert any(u.startswith("github/codeql-action/upload-sarif@") for u in uses)
    runs = " ".join(s.get("run", "") for s in steps)
    assert "--format sarif" in runs and "--format github" in runs
    # The local-hook example must select the same files as the shipped hook.
    local = next(yaml.safe_load(b) for b in blocks if "repo: local" in b)
    pattern = local["repos"][0]["hooks"][0]["files"]
    for path, matches in FILE_CASES:
        assert bool(re.search(pattern, path)) is matches, path


def test_startup_bench_fails_clearly_on_a_missing_project(tmp_path: Path) -> None:
    import subprocess
    import sys

    missing = tmp_path / "nowhere"
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "validate_startup.py"), str(missing), "--runs", "1"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert f"{missing}: no such file or directory" in proc.stderr
