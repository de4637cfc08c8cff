"""MCP servers in `charter run`: the shipped example's server starts (see
test_run_e2e.py::test_notes_core_runs_with_its_authored_tool), and a server
that fails to start says why on the console, not only in its log file."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "tests" / "fixtures" / "run" / "scripts"

# notes-core under --yolo, its model played by the notes-core script.
NOTES_CORE_RUN = (
    "--agent",
    "notes-core",
    "--model",
    f"script:{SCRIPTS / 'notes-core.yaml'}",
    "--yolo",
)


def _broken_notes_core(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of notes-core whose docs server is pointed at a missing folder,
    so it fails to start; and an empty workspace to run it in."""
    project = tmp_path / "notes-core"
    shutil.copytree(REPO / "blueprints" / "notes-core", project)
    manifest = project / "agent" / "mcp" / "docs.yaml"
    manifest.write_text(manifest.read_text().replace('"--root", "docs"', '"--root", "nowhere"'))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return project, workspace


def test_a_server_that_fails_to_start_says_why_on_the_console(
    charter_run: Any, tmp_path: Path
) -> None:
    project, workspace = _broken_notes_core(tmp_path)
    (workspace / "NOTES.md").write_text("remember the milk\n")
    ran = charter_run(project, *NOTES_CORE_RUN, workdir=workspace)
    [server] = ran.of("mcp_server")
    assert server["status"] == "failed"
    [notice] = [e["message"] for e in ran.of("notice") if e["message"].startswith("MCP docs")]
    # The server's own words and where its whole stderr went.
    assert "nowhere is not a directory" in notice
    assert "mcp-stderr.log" in notice and str(ran.run_dir) in notice
    # The model is told the server is not connected, without its stderr.
    [answer] = ran.tool_results("docs__search_docs")
    assert answer.startswith("[unavailable]") and "nowhere" not in answer


def test_quiet_still_says_why_a_server_failed(charter_run: Any, tmp_path: Path) -> None:
    project, workspace = _broken_notes_core(tmp_path)
    ran = charter_run(project, *NOTES_CORE_RUN, "--quiet", workdir=workspace, json_events=False)
    assert "MCP docs: failed" in ran.stderr and "nowhere is not a directory" in ran.stderr
