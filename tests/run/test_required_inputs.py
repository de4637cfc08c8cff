"""A required region filled from the caller is an input the run may not start
without, as Leviath refuses to start without it: Leviath's reviewer needs its
diff (issue 25: it ran without it)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from _support.corpora import SKIP_REASON, leviath_root


def _reviewer(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of Leviath's reviewer agent and an empty work folder (skips without the corpora)."""
    root = leviath_root()
    if root is None:
        pytest.skip(SKIP_REASON)
    agent = tmp_path / "reviewer"
    shutil.copytree(root / "agents" / "reviewer", agent)
    work = tmp_path / "work"
    work.mkdir()
    return agent, work


def test_the_reviewer_does_not_start_without_its_diff(charter_run: Any, tmp_path: Path) -> None:
    agent, work = _reviewer(tmp_path)
    (tmp_path / "model.yaml").write_text("turns:\n  - {text: hi}\n", "utf-8")
    args = ("--agent", "reviewer", "--model", f"script:{tmp_path / 'model.yaml'}", "--yolo")
    ran = charter_run(agent, *args, workdir=work)
    assert ran.code == 2 and "--input diff=VALUE" in ran.stderr
    ran = charter_run(agent, *args, "--input", "diff=+x", workdir=work)
    assert "--input diff" not in ran.stderr
    assert ran.of("run_started"), ran.stderr


def test_a_task_no_region_reads_is_refused_not_ignored(charter_run: Any, tmp_path: Path) -> None:
    agent, work = _reviewer(tmp_path)
    args = ("--agent", "reviewer", "--model", "script:unused", "--yolo", "--input", "diff=+x")
    ran = charter_run(agent, *args, "--task", "review it", workdir=work)
    assert ran.code == 2 and not ran.of("run_started")
    assert "no context region of it is seeded from the task" in ran.stderr
    assert "--input diff=..., --input criteria=..." in ran.stderr
