"""End-to-end runs of `charter run` with scripted models, in process."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from _support.procs import sleepers

from charter.runtime.audit import read_events

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "run"
SCRIPTS = FIXTURES / "scripts"
FAST = FIXTURES / "fast.config.toml"


def script(name: str) -> str:
    return f"script:{SCRIPTS / name}"


def lines(*answers: str) -> str:
    return "".join(a + "\n" for a in answers)


def run_scripted(
    charter_run: Any, workdir: Path, target: Path, agent: str, name: str, *args: str, **options: Any
) -> Any:
    """`charter run` of `agent` in `target` (a project or a plan file), driven by script `name`."""
    return charter_run(
        target, "--agent", agent, "--model", script(name), *args, workdir=workdir, **options
    )


def run_solo(charter_run: Any, workdir: Path, name: str, *args: str, **options: Any) -> Any:
    """`charter run` of the one-stage `solo` fixture agent, driven by script `name`."""
    return run_scripted(charter_run, workdir, FIXTURES / "solo", "solo", name, *args, **options)


def run_coder(charter_run: Any, workdir: Path, *args: str, **options: Any) -> Any:
    """`charter run` of the shipped coder blueprint on a small task."""
    coder = REPO / "blueprints" / "coder"
    task = ("--task", "Add a greeting")
    return charter_run(coder, "--agent", "coder", *task, *args, workdir=workdir, **options)


def audit_of(ran: Any) -> list[dict[str, Any]]:
    read = read_events(ran.run_dir / "audit.jsonl")
    assert read.problems == []
    return read.events


# -- the shipped blueprints ------------------------------------------------------


def test_coder_demo_runs_end_to_end_offline(charter_run: Any, tmp_path: Path) -> None:
    # No --model: the blueprint's demo.script.yaml is the default.
    ran = run_coder(charter_run, tmp_path, "--yolo")
    assert ran.code == 0, ran.stderr
    finished = ran.finished
    assert finished["status"] == "completed"
    assert (tmp_path / "greet.py").read_text().startswith("def greet")
    # The gate on implement -> review held once (nothing was written yet).
    assert [e["to"] for e in ran.of("gate_blocked")] == ["review"]
    stages = [e["stage"] for e in ran.of("stage_entered")]
    assert stages == ["discover", "plan", "implement", "review", "summary"]
    output = Path(finished["output"])
    assert output.name == "output.md" and output.parent == ran.run_dir
    assert "greet.py" in output.read_text()
    assert "greet.py" in finished["output_text"]
    assert (ran.run_dir / "plan.json").is_file()
    events = audit_of(ran)
    kinds = [e["event"] for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert any(e["event"] == "gate" and e["decision"] == "hold" for e in events)
    # The events file holds the same stream as stdout.
    stored = [json.loads(x) for x in (ran.run_dir / "events.jsonl").read_text().splitlines()]
    assert [e["kind"] for e in stored] == ran.kinds()


def test_coder_with_a_person_at_the_terminal(charter_run: Any, tmp_path: Path) -> None:
    # shell: deny with a message; the choice; approve the review call, then
    # the review itself; write_file for this stage; submit_output once.
    answers = lines("m", "not now", "1", "o", "", "s", "o")
    ran = run_coder(charter_run, tmp_path, "--model", script("coder-attended.yaml"), stdin=answers)
    assert ran.code == 0, ran.finished["reason"]
    assert (tmp_path / "greet.py").exists()
    cards = {e["tool"]: e["decision"] for e in ran.of("tool_finished")}
    assert cards["shell"] == "ask→denied"
    assert cards["present_for_review"] == "ask→allowed"
    assert cards["ask_user_choice"] == "allow"
    approved = [e["approved_by"] for e in audit_of(ran) if e.get("approved_by")]
    assert "terminal:stage" in approved and "terminal" in approved


def test_notes_core_runs_with_its_authored_tool(charter_run: Any, tmp_path: Path) -> None:
    (tmp_path / "NOTES.md").write_text("remember the milk\n")
    notes_core = REPO / "blueprints" / "notes-core"
    task = ("--task", "Read my notes")
    ran = run_scripted(
        charter_run, tmp_path, notes_core, "notes-core", "notes-core.yaml", *task, "--yolo"
    )
    assert ran.code == 0, ran.finished["reason"]
    assert ran.finished["output_text"] == "The notes say: remember the milk, and keep it cold."
    assert "keep the milk cold" in (tmp_path / "notes" / "decisions.md").read_text()
    assert ran.tool_results("web_extract")[0].startswith("[denied]")
    [docs] = ran.of("mcp_server")
    assert docs["status"] == "ok" and "docs__search_docs" in docs["offered"]
    assert "search_drafts" not in " ".join(docs["offered"])
    assert "getting-started" in ran.tool_results("docs__search_docs")[0]
    first = ran.of("tool_finished")[0]
    assert (first["decision"], first["rule"]) == ("allow", "launch-flag")  # read_file asks
    assert Path(ran.finished["output"]).name == "output.txt"


# -- one agent through its stages ---------------------------------------------------


def test_attended_run_answers_on_stdin(charter_run: Any, tmp_path: Path) -> None:
    answers = lines("Ada", "d", "o", "2", "o", "", "o", "o")
    out = tmp_path / "answer.json"
    ran = run_solo(charter_run, tmp_path, "solo-attended.yaml", "--output", str(out), stdin=answers)
    assert ran.code == 0, ran.stderr
    assert json.loads(out.read_text()) == {"ok": True, "file": "out.txt"}
    assert (tmp_path / "out.txt").read_text() == "hi"
    cards = [(e["tool"], e["decision"], e["status"]) for e in ran.of("tool_finished")]
    assert cards[:2] == [
        ("write_file", "deny", "invalid"),
        ("submit_output", "deny", "unavailable"),
    ]
    assert ("write_file", "ask→denied", "denied") in cards
    assert ("write_file", "ask→allowed", "ok") in cards
    events = audit_of(ran)
    approvals = [e.get("approved_by") for e in events if e["event"] == "decision"]
    assert "terminal:once" in approvals
    refused = [e for e in events if e.get("rule") == "not-offered-in-stage"]
    assert refused and refused[0]["tool"] == "submit_output"


def test_gate_is_forced_open_after_max_attempts(charter_run: Any, tmp_path: Path) -> None:
    ran = run_solo(charter_run, tmp_path, "solo-gate-forced.yaml", "--yolo")
    assert ran.code == 0, ran.stderr
    assert len(ran.of("gate_blocked")) == 1
    forged = ran.tool_results("write_file")[0]
    assert forged.startswith("[denied]") and ".charter/" in forged
    assert not (tmp_path / ".charter" / "runs" / "forged.jsonl").exists()
    assert ran.of("gate_forced")[0]["to"] == "report"
    assert ran.finished["gates_forced"] == ["work->report"]
    forced = [e for e in audit_of(ran) if e["event"] == "gate" and e["decision"] == "forced"]
    assert forced and forced[0]["to"] == "report"


def test_max_iterations_edge(charter_run: Any, tmp_path: Path) -> None:
    ran = run_solo(charter_run, tmp_path, "solo-max-iterations.yaml", "--yolo")
    assert ran.code == 0, ran.stderr
    taken = ran.of("edge_taken")
    assert [(e["to"], e["condition"]) for e in taken] == [("fallback", "max_iterations")]
    assert ran.finished["output_text"] == "gave up"


def test_shell_timeout(charter_run: Any, tmp_path: Path) -> None:
    ran = run_solo(charter_run, tmp_path, "solo-shell-timeout.yaml", "--yolo")
    assert ran.code == 0, ran.stderr
    shell = ran.of("tool_finished")[0]
    assert shell["status"] == "timeout" and shell["duration_ms"] < 4000


def test_the_config_shell_timeout_is_in_the_plan_and_stops_the_shell(
    charter_run: Any, tmp_path: Path
) -> None:
    """[limits] script_shell_timeout_secs (1 s in fast.config.toml) becomes the
    plan's shell_timeout_secs: the shell tool's description says so and a
    command that runs longer is stopped."""
    ran = run_solo(
        charter_run, tmp_path, "solo-config-shell-timeout.yaml", "--config", str(FAST), "--yolo"
    )
    assert ran.code == 0, ran.stderr
    plan = json.loads((ran.run_dir / "plan.json").read_text())
    [agent] = plan["body"]["agents"]
    assert agent["limits"]["shell_timeout_secs"] == 1
    [shell] = [t for t in agent["tools"] if t["name"] == "shell"]
    assert "stopped after 1 seconds" in shell["description"]
    first = ran.of("tool_finished")[0]
    assert first["tool"] == "shell" and first["status"] == "timeout"
    assert first["duration_ms"] < 4000


def test_interaction_timeout_refuses(charter_run: Any, tmp_path: Path) -> None:
    read_fd, write_fd = os.pipe()  # input that stays open and never says anything
    with os.fdopen(read_fd) as never, os.fdopen(write_fd, "w"):
        ran = run_solo(
            charter_run,
            tmp_path,
            "solo-interaction-timeout.yaml",
            "--config",
            str(FAST),
            stdin=never,
        )
    # The script ends in a stage that is not finished: no output.
    assert ran.code == 4
    assert "script exhausted" in ran.finished["reason"]
    confirm, write = ran.of("tool_finished")
    assert confirm["result"].startswith("[denied]") and "within 1 s" in confirm["result"]
    assert write["decision"] == "ask→denied"
    expired = [e for e in audit_of(ran) if e.get("approved_by") == "expiry"]
    assert expired and expired[0]["rule"] == "approval-expired"
    assert not (tmp_path / "out.txt").exists()


# -- sub-agents -----------------------------------------------------------------------


def test_sub_agents(charter_run: Any, tmp_path: Path) -> None:
    ran = run_scripted(charter_run, tmp_path, FIXTURES / "team", "lead", "team.yaml", "--yolo")
    assert ran.code == 0, ran.stderr
    assert ran.finished["output_text"] == "helpers done"
    done = {e["agent"]: e["status"] for e in ran.of("agent_finished")}
    assert done == {
        "main": "completed",
        "main/1": "completed",
        "main/2": "no_output",
        "main/3": "killed",
        "main/3/1": "killed",
    }
    spawned = {e["child"]: e["agent_name"] for e in ran.of("agent_spawned")}
    assert spawned == {
        "main/1": "helper",
        "main/2": "idler",
        "main/3": "sleeper",
        "main/3/1": "sleeper",
    }
    # The grandchild had no depth left to start another sleeper.
    refused = [e for e in ran.of("tool_finished", "main/3/1") if e["tool"] == "spawn_agent"]
    assert refused and "max_child_depth" in refused[0]["result"]
    assert sleepers("41") == []


# -- refusals to start ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agent", "nobody"], "no agent named 'nobody'"),
        (["--agent", "solo", "--model", "gpt-4o"], "unknown model"),
        (["--agent", "solo", "--model", "script:/nonexistent.yaml"], "cannot read script"),
        (["--agent", "solo"], "no --model given"),
        (["--agent", "solo", "--input", "novalue"], "KEY=VALUE"),
        (
            ["--agent", "solo", "--model", script("team.yaml"), "--base-url", "http://x"],
            "base URL applies only",
        ),
    ],
)
def test_refusals_to_start(charter_run: Any, tmp_path: Path, args: list[str], message: str) -> None:
    ran = charter_run(FIXTURES / "solo", *args, workdir=tmp_path)
    assert ran.code == 2
    assert message in ran.stderr
    assert not (tmp_path / ".charter").exists()


def test_bad_plan_file_is_refused(charter_run: Any, tmp_path: Path) -> None:
    bad = tmp_path / "plan.json"
    bad.write_text('{"schema_version": 1, "digest": "sha256:00", "body": {}')
    ran = charter_run(bad, "--agent", "x", workdir=tmp_path)
    assert ran.code == 2 and "not valid JSON" in ran.stderr


def test_plan_file_runs_like_a_project(charter_run: Any, tmp_path: Path) -> None:
    first = run_solo(charter_run, tmp_path, "solo-gate-forced.yaml", "--yolo")
    plan = first.run_dir / "plan.json"
    again = run_scripted(charter_run, tmp_path, plan, "solo", "solo-gate-forced.yaml", "--yolo")
    assert again.code == 0
    assert again.of("run_started")[0]["plan_digest"] == first.of("run_started")[0]["plan_digest"]


def test_script_expectation_failure_ends_without_output(charter_run: Any, tmp_path: Path) -> None:
    # The attended script expects the full attended tool set; --yolo withdraws
    # the blocking tools, so its first turn's expectation fails.
    ran = run_solo(charter_run, tmp_path, "solo-attended.yaml", "--yolo")
    assert ran.code == 4
    assert "offered tools differ" in ran.finished["reason"]
    assert "unexpected" not in ran.finished["reason"]


def test_quiet_prints_only_the_answer(charter_run: Any, tmp_path: Path) -> None:
    ran = run_solo(
        charter_run, tmp_path, "solo-gate-forced.yaml", "--yolo", "--quiet", json_events=False
    )
    assert ran.code == 0
    assert ran.stdout == '{"forced": true}\n'
    assert ran.stderr == ""


# -- edges the runtime takes on its own --------------------------------------------

ROUTES = [
    # script, the edges taken (target, condition), the answer
    ("routes-stuck.yaml", [("stuck_out", "stuck")], "stuck"),
    ("routes-refused.yaml", [("stuck_out", "stuck")], "refused"),
    ("routes-dead-end.yaml", [("relay", "llm_choice"), ("done", "always")], "idle"),
    ("routes-error.yaml", [("error_out", "error")], "recovered"),
    ("routes-always.yaml", [("relay", "llm_choice"), ("done", "always")], "relayed"),
]


@pytest.mark.parametrize(("name", "edges", "answer"), ROUTES)
def test_runtime_edges(
    charter_run: Any, tmp_path: Path, name: str, edges: list[tuple[str, str]], answer: str
) -> None:
    ran = run_scripted(charter_run, tmp_path, FIXTURES / "routes", "routes", name, "--yolo")
    assert ran.code == 0, ran.finished["reason"]
    assert [(e["to"], e["condition"]) for e in ran.of("edge_taken")] == edges
    assert ran.finished["output_text"] == answer


def test_a_dead_end_is_every_ordinary_target_spent(charter_run: Any, tmp_path: Path) -> None:
    ran = run_scripted(
        charter_run, tmp_path, FIXTURES / "deadend", "deadend", "deadend.yaml", "--yolo"
    )
    assert ran.code == 0, ran.finished["reason"]
    assert [(e["to"], e["condition"]) for e in ran.of("edge_taken")] == [
        ("loop", "llm_choice"),
        ("start", "always"),
        ("idle_out", "dead_end"),
    ]
    assert ran.finished["output_text"] == "dead end"


def test_delegate_task_narrows_the_child_to_the_listed_tools(
    charter_run: Any, tmp_path: Path
) -> None:
    ran = run_scripted(
        charter_run, tmp_path, FIXTURES / "delegation", "boss", "delegation.yaml", "--yolo"
    )
    assert ran.code == 0, ran.finished["reason"]
    assert ran.finished["output_text"] == "The child read what it could."


def test_a_stuck_edge_fires_at_its_own_tool_call_threshold(
    charter_run: Any, tmp_path: Path
) -> None:
    project = FIXTURES / "routes-calls"
    ran = run_scripted(
        charter_run, tmp_path, project, "routes-calls", "routes-calls.yaml", "--yolo"
    )
    assert ran.code == 0, ran.finished["reason"]
    assert [(e["to"], e["condition"]) for e in ran.of("edge_taken")] == [("stuck_out", "stuck")]
    assert ran.finished["output_text"] == "two calls"


def test_environment_credentials_never_reach_the_views(
    charter_run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "charter-test-secret-0123456789abcdef"
    monkeypatch.setenv("CHARTER_TEST_API_TOKEN", secret)
    ran = run_solo(charter_run, tmp_path, "solo-secret.yaml", "--yolo")
    assert ran.code == 0, ran.finished["reason"]
    assert (tmp_path / "s.txt").read_text().endswith(secret)  # the tool itself got it
    assert secret not in ran.stdout
    for name in ("events.jsonl", "audit.jsonl"):
        assert secret not in (ran.run_dir / name).read_text()
    assert "token=" in ran.of("tool_finished")[0]["args"]
