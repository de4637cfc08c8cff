"""A fan_out stage runs one worker per item, at most max_workers at a time,
each a sub-agent at the stage's worker_stage; their submitted answers come
back as one report, in the items' order, written to results_region, and the
run moves on to the merge stage (issue 25: it used to answer "this runtime
cannot")."""

from __future__ import annotations

from typing import Any

BLUEPRINT = """[agent]
name = "analyst"

[stages.split]
mode = "fan_out"
available_tools = []
worker_stage = "gather"
merge_stage = "build"
results_region = "rows"
max_workers = 2
{policy}

[stages.gather]
mode = "output"
available_tools = ["submit_output"]
allow_as_worker = true

[stages.build]
mode = "output"
available_tools = ["submit_output"]
"""

SCRIPT = """turns:
  - stage: split
    tool_calls:
      - name: fan_out
        arguments:
          items:
            - {id: north, context: {region: north}}
            - {id: south, context: {region: south}}
            - {id: east, context: {region: east}}
  - {stage: build, tool_calls: [{name: submit_output, arguments: {content: merged}}]}
agents:
  analyst:
    - stage: gather
      delay_s: 0.3
      tool_calls: [{name: submit_output, arguments: {content: "a row"}}]
"""


def _run(recorded_run: Any, policy: str = "", script: str = SCRIPT) -> tuple[Any, Any]:
    return recorded_run(BLUEPRINT.replace("{policy}", policy), script, "analyst", "--yolo")


def test_workers_run_and_their_report_reaches_the_merge_stage(recorded_run: Any) -> None:
    ran, provider = _run(recorded_run)
    assert ran.code == 0, ran.finished
    assert ran.finished["output_text"] == "merged"
    workers = ran.of("fan_out_worker")
    assert [w["item"] for w in workers] == ["north", "south", "east"]
    assert len({w["worker"] for w in workers}) == 3
    [report] = ran.tool_results("fan_out")
    assert "3 of 3 workers answered." in report
    assert report.index("## north\na row") < report.index("## south") < report.index("## east")
    # each worker saw only its own item, in its worker stage
    worker_turns = [r for r in provider.requests if r.stage == "gather"]
    assert len(worker_turns) == 3
    assert any('"region": "east"' in m.content for r in worker_turns for m in r.messages)
    # the merge stage has the report in front of it (the results region)
    [build] = [r for r in provider.requests if r.stage == "build"]
    assert "## south\na row" in build.system


def test_no_more_than_max_workers_run_at_once(recorded_run: Any) -> None:
    ran, _ = _run(recorded_run)
    order = [
        (e["kind"], e.get("worker") or e["agent"])
        for e in ran.events
        if e["kind"] == "fan_out_worker" or (e["kind"] == "agent_finished" and e["agent"] != "main")
    ]
    running = peak = 0
    for kind, _who in order:
        running += 1 if kind == "fan_out_worker" else -1
        peak = max(peak, running)
    assert peak == 2, order


def test_fail_all_fails_the_call_when_a_worker_fails(recorded_run: Any) -> None:
    broken = SCRIPT.split("agents:")[0] + (
        "agents:\n  analyst:\n    - {stage: gather, fail: the provider is down}\n"
    )
    ran, _ = _run(recorded_run, policy='on_worker_failure = "fail_all"', script=broken)
    [report] = ran.tool_results("fan_out")
    assert "workers failed" in report and "stage fails them all" in report
