"""``charter sandbox`` without its CLI: the runtime's front door checks the
agent and stage, describes the sandbox when nothing is to run, and refuses
with the exit code the verb uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from charter.compiler import compile_project, load_project
from charter.runtime import Plan, SandboxRefused, run_contained

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def coder() -> Plan:
    result = compile_project(load_project(REPO / "blueprints" / "coder", use_default_config=False))
    assert result.plan is not None
    return result.plan


def test_an_unknown_agent_or_stage_is_refused_with_2(coder: Plan, tmp_path: Path) -> None:
    with pytest.raises(SandboxRefused, match=r"no agent named 'nobody'.*\(agents: coder\)") as c:
        run_contained(coder, "nobody", ["true"], workspace=tmp_path)
    assert c.value.exit_code == 2
    with pytest.raises(SandboxRefused, match="has no stage 'nowhere' \\(stages: ") as c:
        run_contained(coder, "coder", ["true"], stage_name="nowhere", workspace=tmp_path)
    assert c.value.exit_code == 2


def test_a_workspace_that_is_no_directory_is_refused(coder: Plan, tmp_path: Path) -> None:
    with pytest.raises(SandboxRefused, match="the workdir is not a directory"):
        run_contained(coder, "coder", ["true"], workspace=tmp_path / "missing")


def test_with_nothing_to_run_the_sandbox_is_described(coder: Plan, tmp_path: Path) -> None:
    said: list[str] = []
    try:
        done = run_contained(coder, "coder", [], workspace=tmp_path, notice=said.append)
    except SandboxRefused as exc:  # a host that can build no sandbox at all
        assert exc.exit_code == 125
        return
    assert done.code == 0
    assert done.description
    # Nothing is left behind: the private HOME was temporary.
    assert not list(tmp_path.iterdir())
