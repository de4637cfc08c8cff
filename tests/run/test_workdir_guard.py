"""A run whose workspace is a home directory or a filesystem root is
confirmed first, as Leviath confirms it; with nobody to ask it does not start
(stricter than Leviath, which goes on with a warning); [security]
allowed_workdirs lets it start there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from charter.runtime.run.workdir import workdir_concern

BLUEPRINT = """[agent]
name = "a"

[stages.work]
mode = "autonomous"
available_tools = []
"""


def test_what_is_questioned(tmp_path: Path) -> None:
    home = tmp_path / "home" / "ann"
    assert workdir_concern(Path("/"), home, ()) == "a filesystem root"
    assert workdir_concern(home, home, ()) == "your home directory"
    assert workdir_concern(home / "project", home, ()) is None
    assert workdir_concern(home, home, (str(tmp_path / "home"),)) is None
    assert workdir_concern(Path("/"), home, ("relative/dir",)) == "a filesystem root"


def test_an_unattended_run_in_the_home_directory_does_not_start(
    charter_run: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "agent.leviath").write_text(BLUEPRINT, "utf-8")
    (tmp_path / "model.yaml").write_text("turns:\n  - {stage: work, text: done}\n", "utf-8")
    args = ("--agent", "a", "--model", f"script:{tmp_path / 'model.yaml'}", "--yolo")
    ran = charter_run(agent, *args, workdir=home)
    assert ran.code == 2
    assert "home directory" in ran.stderr and "allowed_workdirs" in ran.stderr
    config = tmp_path / "config.toml"
    config.write_text(f'[security]\nallowed_workdirs = ["{home}"]\n', "utf-8")
    ran = charter_run(agent, *args, "--config", str(config), workdir=home)
    assert ran.code == 0, ran.stderr
