"""Each of Leviath's seven bundled agents, unmodified, runs end to end under
Charter with a model that walks every stage it can reach (including the
recovery stages an error edge leads to: the walk fails once on purpose where
one leads somewhere new), its fan-out workers included, and the run shows
what Leviath's would: regions seeded, required regions enforced, workers run
at their worker stage, the answer submitted (issue 25's acceptance run).

The seven compile as one project, so the research agents' fan-out reaches
``researcher`` by name, as Leviath reaches an installed agent. The
OpenAI-compatible run drives the researcher and the data-analyst through the
chat-completions test server on loopback the same way."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from _support.corpora import SKIP_REASON, leviath_root
from _support.walker import WalkingProvider, openai_reply

from charter.compiler import compile_project, load_project
from charter.runtime.plan import AgentPlan, Plan

AGENTS = ["coder", "data-analyst", "deep-researcher", "log-analyzer", "researcher", "reviewer"]
AGENTS.append("wide-researcher")


@pytest.fixture(scope="module")
def agents_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = leviath_root()
    if root is None:
        pytest.skip(SKIP_REASON)
    home = tmp_path_factory.mktemp("leviath") / "agents"
    shutil.copytree(root / "agents", home)
    return home


@pytest.fixture(scope="module")
def plan(agents_dir: Path) -> Plan:
    result = compile_project(load_project(agents_dir, use_default_config=False))
    assert result.plan is not None, [str(d) for d in result.diagnostics if d.severity == "error"]
    return result.plan


def _reachable(agent: AgentPlan) -> set[str]:
    """Stages the walk can reach: by the model's choice, always, or an error."""
    seen, todo = {agent.entry_stage}, [agent.entry_stage]
    while todo:
        stage = agent.stage(todo.pop())
        assert stage is not None
        for e in stage.edges:
            if e.condition in ("llm_choice", "always", "error") and e.to not in seen:
                seen.add(e.to)
                todo.append(e.to)
    return seen


def _takes_task(agent: AgentPlan) -> bool:
    return any(
        r.seed is not None and (r.seed.source, r.seed.key) == ("caller", "task")
        for s in agent.stages
        for r in s.regions
    )


def _args(agent: AgentPlan) -> list[str]:
    out = ["--agent", agent.name, "--yolo"]
    if _takes_task(agent):
        out += ["--task", "Walk every stage of this agent."]
    for key in agent.required_inputs:
        if key != "task":
            out += ["--input", f"{key}=+ an added line"]
    return out


@pytest.mark.parametrize("name", AGENTS)
def test_each_bundled_agent_runs_end_to_end(
    name: str,
    agents_dir: Path,
    plan: Plan,
    charter_run: Any,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    agent = plan.body.agent(name)
    assert agent is not None
    provider = WalkingProvider(plan, name)
    import charter.runtime.models as models

    monkeypatch.setattr(models, "load_provider", lambda *a, **k: provider)
    work = tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text("# A project to walk\n", "utf-8")
    ran = charter_run(agents_dir, *_args(agent), "--model", "script:unused", workdir=work)
    assert ran.code == 0, (ran.finished, ran.stderr[-2000:])
    assert ran.finished["output_text"], ran.finished
    entered = {e["stage"] for e in ran.of("stage_entered", agent="main")}
    assert entered == _reachable(agent) - {"reassess"}, sorted(entered)
    # every interaction point of a stage the walk entered was put (unattended here)
    points = {p.name for s in agent.stages if s.name in entered for p in s.interaction_points}
    assert points <= {e["point"] for e in ran.of("checkpoint")}
    # the task reached its region(s) before the first turn
    entry = agent.stage(agent.entry_stage)
    assert entry is not None
    from_task = {
        r.name
        for r in entry.regions
        if r.seed is not None and (r.seed.source, r.seed.key) == ("caller", "task")
    }
    assert from_task <= {e["region"] for e in ran.of("region_seeded")}
    assert from_task or not _takes_task(agent)
    for stage in agent.stages:
        if stage.fan_out is None:
            continue
        workers = ran.of("fan_out_worker")
        assert workers and len(workers) % 2 == 0, workers  # two items each time it ran
        worker_stages = {
            e["stage"] for e in ran.events if e["kind"] == "stage_entered" and e["agent"] != "main"
        }
        if stage.fan_out.worker_stage is not None:
            assert worker_stages == {stage.fan_out.worker_stage}
        else:  # another installed agent, walked from its entry stage to its answer
            worker = plan.body.agent(stage.fan_out.worker_agent or "")
            assert worker is not None and worker.entry_stage in worker_stages


@pytest.mark.parametrize("name", ["researcher", "data-analyst"])
def test_an_openai_compatible_server_drives_them_the_same_way(
    name: str,
    agents_dir: Path,
    plan: Plan,
    charter_run: Any,
    model_server: Any,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    agent = plan.body.agent(name)
    assert agent is not None
    walk = openai_reply(plan, model_server.completion)
    model_server.reply = lambda seen: model_server.Reply(body=walk(seen.body))
    work = tmp_path / "work"
    work.mkdir()
    model = ("--model", "openai:fake", "--base-url", model_server.base_url)
    ran = charter_run(agents_dir, *_args(agent), *model, workdir=work)
    assert ran.code == 0, (ran.finished, ran.stderr[-2000:])
    entered = [e["stage"] for e in ran.of("stage_entered", agent="main")]
    output_stages = {s.name for s in agent.stages if s.mode == "output"}
    assert entered[0] == agent.entry_stage and entered[-1] in output_stages, entered
    assert len(model_server.seen) >= len(entered)
