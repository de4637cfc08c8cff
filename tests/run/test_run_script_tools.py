"""`charter run` runs a Leviath agent's script tool in the agent loop: the
researcher's own web_fetch, unmodified, against a loopback page the user's
config lets it reach."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.rhai.test_script_tools import LEVIATH
from tests.rhai.test_script_tools import server as server  # noqa: F401 - the fixture

pytestmark = pytest.mark.skipif(LEVIATH is None, reason="the Leviath corpus is absent")


def test_charter_run_runs_the_researchers_web_fetch(
    server: str, tmp_path: Path, charter_run: Any
) -> None:
    assert LEVIATH is not None
    root = tmp_path / "researcher"
    shutil.copytree(LEVIATH / "agents" / "researcher", root)
    cfg = tmp_path / "config.toml"
    cfg.write_text("[security]\nallow_local_network = true\n")
    model = tmp_path / "model.yaml"
    call = f"{{name: web_fetch, arguments: {{url: '{server}/a'}}}}"
    model.write_text(
        f"turns:\n  - {{stage: gather, tool_calls: [{call}]}}\n"
        "  - {stage: gather, text: Read it.}\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    ran = charter_run(
        root, "--agent", "researcher", "--config", str(cfg), "--allow", "web_fetch",
        "--model", f"script:{model}", "--task", "what does the page say?", workdir=work,
    )  # fmt: skip
    [fetched] = ran.tool_results("web_fetch")
    assert "Charter reads this page & keeps only its prose." in fetched, ran.stderr
