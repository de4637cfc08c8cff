"""Stage hooks run where Leviath runs them, and a hook's refusal holds: a
hook that refuses every call stops the run before any call runs; a hook
that rewrites a call sends the rewrite through every gate; terminal hooks
reshape the answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

BLUEPRINT = """[agent]
name = "hooked"

[tool_permissions]
write_file = "allow"
list_dir = "allow"

[stages.work]
mode = "autonomous"
available_tools = ["write_file", "list_dir"]

[stages.work.hooks]
{hooks}
"""

WRITE = """turns:
  - {stage: work, tool_calls: [{name: write_file, arguments: {path: made.txt, content: hi}}]}
  - {stage: work, text: Done.}
"""

REFUSE_ALL = """
fn on_tool_call(ctx) {
    #{ action: "cancel", reason: `no tools here (${ctx.tool_calls.len()} refused)` }
}
"""

REWRITE = """
// Every call becomes a listing of the workspace: a hook may narrow what runs.
fn on_tool_call(ctx) {
    let calls = [];
    for c in ctx.tool_calls {
        calls.push(#{ name: "list_dir", arguments: #{ path: "." } });
    }
    #{ action: "modify", value: calls }
}
"""

TIDY = """
fn on_completion(ctx) {
    #{ action: "modify", value: `[checked] ${ctx.output.trim()}` }
}
"""


def _run(charter_run: Any, tmp_path: Path, hooks: dict[str, tuple[str, str]]) -> tuple[Any, Path]:
    agent = tmp_path / "agent"
    (agent / "hooks").mkdir(parents=True)
    lines = []
    for hook, (file, text) in hooks.items():
        (agent / "hooks" / file).write_text(text)
        lines.append(f'{hook} = "hooks/{file}"')
    (agent / "agent.leviath").write_text(BLUEPRINT.replace("{hooks}", "\n".join(lines)))
    (tmp_path / "model.yaml").write_text(WRITE)
    work = tmp_path / "work"
    work.mkdir()
    ran = charter_run(
        agent, "--agent", "hooked", "--model", f"script:{tmp_path / 'model.yaml'}", workdir=work
    )
    return ran, work


def test_a_hook_that_refuses_every_call_refuses_them(charter_run: Any, tmp_path: Path) -> None:
    ran, work = _run(charter_run, tmp_path, {"on_tool_call": ("refuse.rhai", REFUSE_ALL)})
    assert not (work / "made.txt").exists()
    assert not ran.tool_results("write_file")
    assert ran.finished["status"] == "failed"
    assert "on_tool_call: refused: no tools here (1 refused)" in ran.finished["reason"]
    [hook] = ran.of("hook")
    assert hook["hook"] == "on_tool_call" and hook["action"] == "refused"


def test_a_rewritten_call_runs_instead_of_the_models(charter_run: Any, tmp_path: Path) -> None:
    ran, work = _run(charter_run, tmp_path, {"on_tool_call": ("rewrite.rhai", REWRITE)})
    assert ran.code == 0, ran.stderr
    assert not (work / "made.txt").exists()
    assert ran.tool_results("list_dir"), ran.kinds
    assert not ran.tool_results("write_file")


def test_on_completion_reshapes_the_answer(charter_run: Any, tmp_path: Path) -> None:
    ran, work = _run(charter_run, tmp_path, {"on_completion": ("tidy.rhai", TIDY)})
    assert ran.code == 0, ran.stderr
    assert ran.finished["output_text"] == "[checked] Done."


def test_a_hook_that_throws_fails_the_run(charter_run: Any, tmp_path: Path) -> None:
    bad = 'fn on_tool_call(ctx) { throw "broken gate"; }'
    ran, work = _run(charter_run, tmp_path, {"on_tool_call": ("bad.rhai", bad)})
    assert not (work / "made.txt").exists()
    assert ran.finished["status"] == "failed"
    assert "broken gate" in ran.finished["reason"]


OUTPUT_BLUEPRINT = """[agent]
name = "checked"

[stages.answer]
mode = "output"
available_tools = ["submit_output"]
output = { format = "text", validator = "checks/validate.rhai" }
"""

SUBMITS = """turns:
  - {stage: answer, tool_calls: [{name: submit_output, arguments: {content: "draft one"}}]}
  - {stage: answer, tool_calls: [{name: submit_output, arguments: {content: "FINAL: two"}}]}
"""


def _validated(charter_run: Any, tmp_path: Path, script: str) -> Any:
    agent = tmp_path / "agent"
    (agent / "checks").mkdir(parents=True)
    (agent / "checks" / "validate.rhai").write_text(script)
    (agent / "agent.leviath").write_text(OUTPUT_BLUEPRINT)
    (tmp_path / "model.yaml").write_text(SUBMITS)
    work = tmp_path / "work"
    work.mkdir()
    return charter_run(
        agent,
        "--agent",
        "checked",
        "--allow",
        "submit_output",
        "--model",
        f"script:{tmp_path / 'model.yaml'}",
        workdir=work,
    )


def test_an_output_validator_holds_the_stage_until_it_accepts(
    charter_run: Any, tmp_path: Path
) -> None:
    check = 'fn validate(content) { if content.starts_with("FINAL:") { () } else { "say FINAL:" } }'
    ran = _validated(charter_run, tmp_path, check)
    assert ran.code == 0, ran.stderr
    [first, second] = ran.tool_results("submit_output")
    assert "the final output was rejected: say FINAL:" in first
    assert ran.finished["output_text"] == "FINAL: two"


def test_a_validator_that_rejects_everything_never_lets_the_stage_finish(
    charter_run: Any, tmp_path: Path
) -> None:
    ran = _validated(charter_run, tmp_path, 'fn validate(content) { "never" }')
    assert ran.finished["status"] != "completed"
    assert all("rejected: never" in r for r in ran.tool_results("submit_output"))
