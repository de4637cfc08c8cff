"""Demiurge's own files, as git stores them, validate and compile.

The real cores, the global fallback file and the packaged cores and tools
live in ``../shared/corpora/demiurge/`` (or ``$CHARTER_CORPORA/demiurge``);
without them these tests skip. Each project is checked the way
``charter validate`` checks it (load, compile, lint, self-tests) and must have
no error; then it must compile to a plan. The files are read in place, or
copied into a temporary folder where a test assembles a core from packaged
parts; their text never enters this repository.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
from pathlib import Path

import pytest

from charter.compiler.check import check_project
from charter.compiler.compile import CompileOptions, compile_project
from charter.compiler.diagnostics import Diagnostic
from charter.compiler.frontends.project import Project, load_project
from charter.runtime.gates import decide
from charter.runtime.plan import AgentPlan, Plan
from charter.runtime.policy.session import open_session
from charter.runtime.results import ToolCall

OPTIONS = CompileOptions("posix", "/bin/bash")


def _corpus() -> Path | None:
    env = os.environ.get("CHARTER_CORPORA")
    base = Path(env) if env else Path(__file__).resolve().parents[2].parent / "shared" / "corpora"
    found = base / "demiurge"
    return found if found.is_dir() else None


CORPUS = _corpus()
pytestmark = pytest.mark.skipif(
    CORPUS is None,
    reason="Demiurge's real files are absent: no ../shared/corpora/demiurge next to the "
    "repository and no $CHARTER_CORPORA",
)

# Every project of the corpus that must be clean, and the agents it holds.
PROJECTS = {
    "agents/assistant": ["assistant"],
    "agents/evolver": ["evolver"],
    "agents": ["assistant", "evolver"],
    "package-repository/core/tts_summarizer": ["tts_summarizer"],
}


def _where(rel: str) -> Path:
    assert CORPUS is not None
    return CORPUS / rel


def _errors(project: Project) -> list[Diagnostic]:
    diags = [*project.diagnostics, *check_project(project, OPTIONS)]
    return [d for d in diags if d.is_error]


def _compiled(root: Path) -> Plan:
    project = load_project(root, use_default_config=False)
    errors = _errors(project)
    assert not errors, "\n".join(f"{d.span}: {d.code} {d.message}" for d in errors)
    result = compile_project(project, OPTIONS)
    assert result.plan is not None
    return result.plan


@functools.cache
def _plan(rel: str) -> Plan:
    return _compiled(_where(rel))


def _agent(plan: Plan, name: str) -> AgentPlan:
    return next(a for a in plan.body.agents if a.name == name)


@pytest.mark.parametrize("rel", sorted(PROJECTS))
def test_real_project_validates_with_no_error_and_compiles(rel: str) -> None:
    plan = _plan(rel)
    assert sorted(a.name for a in plan.body.agents) == PROJECTS[rel]


def test_the_whole_agents_tree_reads_the_fallback_as_the_global_layer() -> None:
    project = load_project(_where("agents"), use_default_config=False)
    assert sorted(a.directory for a in project.agents) == ["assistant", "evolver"]
    for agent in project.agents:
        assert agent.fallback is not None and agent.fallback.model is not None
        assert agent.fallback.display == "agent.yaml"


def test_evolvers_disabled_tools_are_not_offered() -> None:
    [stage] = _agent(_plan("agents/evolver"), "evolver").stages
    offered = set(stage.attended)
    assert {"read_file", "terminal", "write_file"} <= offered
    assert not offered & {"clarify", "session_search", "skill_manage", "todo", "web_extract"}


@pytest.fixture(scope="module")
def assistant_with_every_tool(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    """The assistant core with every packaged tool installed under its tools root."""
    root = tmp_path_factory.mktemp("installed") / "assistant"
    shutil.copytree(_where("agents/assistant"), root)
    packaged = sorted(p for p in _where("package-repository/tool").iterdir() if p.is_dir())
    assert len(packaged) >= 10
    for tool in packaged:
        shutil.copytree(tool, root / "agent" / "tools" / tool.name)
    return _compiled(root)


def test_the_assistant_with_every_packaged_tool_validates(assistant_with_every_tool: Plan) -> None:
    agent = _agent(assistant_with_every_tool, "assistant")
    packaged = {p.name for p in _where("package-repository/tool").iterdir() if p.is_dir()}
    authored = {t.name for t in agent.tools if t.source == "authored"}
    assert packaged | {"echo"} == authored


@pytest.mark.parametrize(
    ("tool", "args", "want"),
    [
        # approval_policy: auto, capability network.fetch granted by the core
        ("honcho_search", {"query": "q"}, "allow"),
        # approval_policy: auto and no registry capability at all
        ("memory", {"target": "memory", "action": "list"}, "allow"),
        ("text_to_speech_openai", {"text": "hi"}, "ask"),
        # 'y' is one of the tool's own enum values: text, not true
        ("web_search_tavily", {"query": "q", "time_range": "y"}, "ask"),
        ("web_search_tavily", {"query": "q", "include_answer": "false"}, "ask"),
        ("web_search_brave", {"query": "q", "safesearch": "off"}, "ask"),
        # the built-ins the host runs without asking
        ("search_files", {"query": "x"}, "allow"),
        ("todo", {"action": "list"}, "allow"),
        ("delegate_task", {"goal": "g", "core_id": "evolver"}, "allow"),
        ("delegate_task", {"goal": "g"}, "deny"),  # no agents.spawn:assistant
        ("terminal", {"command": "make deploy"}, "ask"),
    ],
    ids=lambda v: json.dumps(v) if isinstance(v, dict) else str(v),
)
def test_real_tools_are_decided_as_the_host_decides_them(
    assistant_with_every_tool: Plan, tool: str, args: dict[str, str], want: str, tmp_path: Path
) -> None:
    session = open_session(assistant_with_every_tool, "assistant", workspace=tmp_path)
    out = decide(session, ToolCall(tool, args))
    assert out.decision == want, (out.gate, out.rule, out.reason)
    assert out.gate != "schema", out.reason
