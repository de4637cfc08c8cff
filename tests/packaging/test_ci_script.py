""".ci/run: the newest Python it finds, and the tests it runs there exist."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CI = (REPO / ".ci" / "run").read_text()

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="the CI script is bash")


def _newest(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    function = re.search(r"^newest_python\(\) \{\n.*?^\}\n", CI, flags=re.M | re.S)
    assert function is not None
    script = function.group(0) + "newest_python\n"
    return subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, timeout=30
    )


def _fake_python(path: Path, version: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho {version}\n")
    path.chmod(0o755)


def test_the_newest_python_is_the_highest_version_found(tmp_path: Path) -> None:
    pyenv = tmp_path / "pyenv"
    _fake_python(pyenv / "versions/3.12.4/bin/python3.12", "3.12.4")
    _fake_python(pyenv / "versions/3.13.0/bin/python3.13", "3.13.0")
    _fake_python(pyenv / "versions/3.13.2/bin/python3.13", "3.13.2")
    env = {"PATH": "/usr/bin:/bin", "PYENV_ROOT": str(pyenv), "HOME": str(tmp_path)}
    done = _newest(env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(pyenv / "versions/3.13.2/bin/python3.13")


def test_no_newer_python_is_a_failure_not_a_pass(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "PYENV_ROOT": str(tmp_path / "none"), "HOME": str(tmp_path)}
    assert _newest(env).returncode == 1
    assert "exit 1" in CI.split("elif ! newest=")[1].split("else")[0]


def test_every_folder_run_on_the_newest_python_exists() -> None:
    block = re.search(r"^NEWEST_TESTS=\((.*?)^\)", CI, flags=re.M | re.S)
    assert block is not None
    paths = block.group(1).split()
    assert "tests/net" in paths and "tests/cli" in paths  # URL normalisation, argparse
    for path in paths:
        assert (REPO / path).exists(), f"{path} in .ci/run's NEWEST_TESTS no longer exists"
