"""``charter run`` without its CLI: the runtime's front door starts a run from
a request and a plan loader, refuses one that cannot start with the exit code
the verb uses, and hands the answer back for the caller to print."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from charter.compiler import compile_project, load_project
from charter.runtime import LaunchRequest, Plan, RunRefused, launch_run, read_events

REPO = Path(__file__).resolve().parents[2]
SOLO = REPO / "tests" / "fixtures" / "run" / "solo"
SCRIPTS = REPO / "tests" / "fixtures" / "run" / "scripts"


@pytest.fixture(scope="module")
def solo_plan() -> Plan:
    result = compile_project(load_project(SOLO, use_default_config=False))
    assert result.plan is not None, [str(d) for d in result.diagnostics]
    return result.plan


def _request(workspace: Path, **changes: object) -> LaunchRequest:
    fields: dict[str, object] = {
        "agent": "solo",
        "target": SOLO,
        "model": f"script:{SCRIPTS / 'solo-surrogate.yaml'}",
        "yolo": True,
        "workspace": workspace,
        "view": "quiet",
    }
    fields.update(changes)
    return LaunchRequest(**fields)  # type: ignore[arg-type]


def test_a_run_launched_from_the_runtime_returns_its_answer(
    solo_plan: Plan, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loads: list[int] = []

    def load() -> tuple[Plan, Path | None]:
        loads.append(1)
        return solo_plan, None

    end = launch_run(_request(tmp_path), load)
    assert end.code == 0
    assert end.answer is not None and json.loads(end.answer) == {"ok": True}
    assert loads == [1]
    # The runtime prints no answer of its own: that is the caller's to do.
    assert capsys.readouterr().out == ""
    (run_dir,) = (tmp_path / ".charter" / "runs").iterdir()
    assert (run_dir / "output.json").read_text(encoding="utf-8") == end.answer
    audit = read_events(run_dir / "audit.jsonl")
    assert audit.problems == []
    assert audit.events[-1]["event"] == "run_finished"
    assert audit.events[-1]["exit_code"] == 0


def test_json_events_carry_the_answer_instead(
    solo_plan: Plan, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    end = launch_run(_request(tmp_path, view="json"), lambda: (solo_plan, None))
    assert (end.code, end.answer) == (0, None)
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert json.loads(events[-1]["output_text"]) == {"ok": True}


def test_a_loader_refusal_is_a_run_refused_and_no_run_directory(tmp_path: Path) -> None:
    with pytest.raises(RunRefused, match="^plan.json: damaged$") as caught:
        launch_run(_request(tmp_path), lambda: "plan.json: damaged")
    assert caught.value.exit_code == 2
    assert not (tmp_path / ".charter").exists()


def test_checks_before_loading_come_first(solo_plan: Plan, tmp_path: Path) -> None:
    # A bad --input is refused before the plan is loaded (or a project compiled).
    def load() -> tuple[Plan, Path | None]:
        raise AssertionError("loaded after a refusal")

    with pytest.raises(RunRefused, match="KEY=VALUE"):
        launch_run(_request(tmp_path, inputs=("novalue",)), load)


def test_an_unknown_agent_names_the_agents(solo_plan: Plan, tmp_path: Path) -> None:
    with pytest.raises(RunRefused, match=r"no agent named 'nobody'.*\(agents: solo\)") as caught:
        launch_run(_request(tmp_path, agent="nobody"), lambda: (solo_plan, None))
    assert caught.value.exit_code == 2


def test_the_verbs_help_states_the_runtimes_default_retries() -> None:
    # The verb's --help says the default without loading the run machinery.
    from charter.compiler.cli import run as verb
    from charter.runtime.run import launch

    assert verb.DEFAULT_MODEL_RETRIES == launch.DEFAULT_MODEL_RETRIES


def test_without_a_model_or_a_place_for_the_demo_script_the_run_is_refused(
    solo_plan: Plan, tmp_path: Path
) -> None:
    request = LaunchRequest(agent="solo", workspace=tmp_path, yolo=True)
    with pytest.raises(RunRefused, match="no --model given and no demo.script.yaml"):
        launch_run(request, lambda: (solo_plan, None))
