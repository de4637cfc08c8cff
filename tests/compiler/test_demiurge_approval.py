"""Approval as the agent host applies it, end to end: compile a small core,
open a session with the launch flags, and decide a call.

The golden table ``tests/fixtures/demiurge/approval/decisions.tsv`` holds one
call per line (project, agent, tool, arguments, flags, expected decision and
gate); the projects beside it are the cores it names. Adding a case is adding
a line. What it pins:

* ``approval.capabilities`` keys ``tool.call:<tool>`` apply, and ``--yolo``
  never lifts the deny they give;
* a core-only agent's tools whose registry approval is ``auto`` run without
  asking, as in the host (authored tools by their ``approval_policy``);
* ``delegate_task`` needs ``agents.spawn:<core>``, the calling core when no
  ``core_id`` is given;
* the global fallback file's approval block tightens every core below it.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from charter.compiler.compile import CompileOptions, compile_project
from charter.compiler.frontends.project import load_project
from charter.runtime.gates import decide
from charter.runtime.plan import Plan
from charter.runtime.policy.session import open_session
from charter.runtime.results import ToolCall

DATA = Path(__file__).resolve().parent.parent / "fixtures" / "demiurge" / "approval"
OPTIONS = CompileOptions("posix", "/bin/bash")


def _rows() -> list[tuple[str, ...]]:
    rows = []
    for line in (DATA / "decisions.tsv").read_text("utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            cells = tuple(line.split("\t"))
            assert len(cells) == 7, line
            rows.append(cells)
    return rows


@functools.cache
def _plan(project: str) -> Plan:
    loaded = load_project(DATA / project, use_default_config=False)
    result = compile_project(loaded, OPTIONS)
    errors = [d for d in result.diagnostics if d.is_error]
    assert not errors and result.plan is not None, errors
    return result.plan


@pytest.mark.parametrize(
    ("project", "agent", "tool", "args", "flags", "want", "where"),
    _rows(),
    ids=lambda v: str(v)[:40],
)
def test_decision(
    project: str,
    agent: str,
    tool: str,
    args: str,
    flags: str,
    want: str,
    where: str,
    tmp_path: Path,
) -> None:
    session = open_session(_plan(project), agent, workspace=tmp_path, yolo=flags == "yolo")
    out = decide(session, ToolCall(tool, json.loads(args)))
    gate, _, rule = where.partition(":")
    assert (out.decision, out.gate) == (want, gate), out.reason
    if rule:
        assert out.rule == rule, out.reason


def test_the_plan_says_where_each_approval_came_from() -> None:
    plan = _plan("terminal_denied")
    [agent] = plan.body.agents
    [stage] = agent.stages
    terminal = next(t for t in stage.tools if t.name == "terminal")
    assert (terminal.decision.permission, terminal.decision.liftable) == ("deny", False)
    said = {s.scope: s for s in terminal.decision.scopes}
    cap = said["core_approval_capability"]
    assert cap.value == "deny" and cap.source is not None
    assert (cap.source.path, cap.source.line) == ("agent.yaml", 7)
    assert "tool.call:terminal" in cap.detail


def test_a_core_only_agents_default_is_the_registry_approval() -> None:
    plan = _plan("lead")
    [agent] = plan.body.agents
    [stage] = agent.stages
    tools = {t.name: t.decision for t in stage.tools}
    search = {s.scope: s for s in tools["search_files"].scopes}
    assert "builtin_default" not in search
    assert search["registry_default"].value == "allow"
    assert "built-in registry: auto" in search["registry_default"].detail
    notes = {s.scope: s for s in tools["notes_auto"].scopes}
    src = notes["registry_default"].source
    assert src is not None and src.path == "agent/tools/notes_auto/tool.yaml"
    # 'Prompt' is read as prompt, and it tightens what the tool.yaml says.
    assert tools["notes_prompt"].permission == "ask"


def test_the_global_layer_is_named_in_the_plan() -> None:
    plan = _plan("fleet")
    for agent in plan.body.agents:
        [stage] = agent.stages
        web = next(t for t in stage.tools if t.name == "web_extract").decision
        said = {s.scope: s for s in web.scopes}
        src = said["global_approval_tool"].source
        assert src is not None and (src.path, src.line) == ("agents/agent.yaml", 6)
        assert web.permission == "deny"
