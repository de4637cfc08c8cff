"""delegate_task's child controls, tools_list, session_search,
schedule_manage and the host-only core tools, on notes-core's compiled plan."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from charter.compiler.catalog.builtin import builtin_tools
from charter.runtime.gates import execute
from charter.runtime.plan import Plan
from charter.runtime.policy.session import open_session
from charter.runtime.results import ToolCall, ToolResult
from charter.runtime.tools.catalog_tools import cron_problem
from charter.runtime.tools.registry import IMPLEMENTATIONS, dispatch

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
# Keys the run loop supplies (sub-agents, people); outside `charter run` a
# call to one of them is answered "not available in this runtime".
RUN_LOOP_KEYS = {"agents.spawn", "agents.send", "human.ask", "human.review"}


def _call(
    notes_plan: tuple[Plan, Path],
    rt: Any,
    provider: Any,
    tool: str,
    args: dict[str, Any],
    **session: Any,
) -> ToolResult:
    plan, _ = notes_plan
    s = session.pop("session", None) or open_session(
        plan, "notes-core", workspace=rt.workspace, run_id="run-a", **session
    )
    return execute(s, ToolCall(tool, args, "c1"), None, provider, runtime=rt)


def test_every_catalog_tool_has_an_implementation_or_a_run_loop_owner() -> None:
    missing = {t.impl for t in builtin_tools().values()} - set(IMPLEMENTATIONS) - RUN_LOOP_KEYS
    assert not missing


def _delegate_cases() -> list[Any]:
    rows = [json.loads(x) for x in (FIXTURES / "delegate.jsonl").read_text().splitlines() if x]
    return [pytest.param(r, id=r["why"]) for r in rows]


@pytest.mark.parametrize("case", _delegate_cases())
def test_delegate_task_child_controls(
    case: dict[str, Any], notes_plan: Any, make_rt: Any, recorder: Any
) -> None:
    res = _call(notes_plan, make_rt(), recorder, "delegate_task", case["args"])
    assert res.rule == case["rule"], res.content
    assert case["says"] in res.content
    assert not res.ok


def test_tools_list_shows_effective_decisions(notes_plan: Any, make_rt: Any, recorder: Any) -> None:
    rt = make_rt()
    res = _call(notes_plan, rt, recorder, "tools_list", {}, allow=["write_file"])
    assert res.ok
    rows = {r["name"]: r for r in res.data["tools"]}
    assert rows["read_file"]["decision"] == "ask"  # approval.default: prompt is stricter
    assert rows["web_extract"]["decision"] == "deny (capability network.fetch not granted)"
    assert rows["write_file"]["decision"] == "allow (--allow write_file lifts the ask)"
    assert rows["terminal"]["decision"] == "ask"
    assert rows["evolve_core"]["decision"] == "not available in this runtime (host-only)"
    assert rows["project_note"]["source"] == "authored"
    assert "project_note [ask]: Read the project note for a topic" in res.content
    outside = dispatch("tools_list", {}, rt)
    assert (outside.status, outside.rule) == ("unavailable", "no-session")


def test_host_only_core_tools_refuse_per_action(
    notes_plan: Any, make_rt: Any, recorder: Any
) -> None:
    plan, _ = notes_plan
    agent = plan.body.agents[0]
    for name in ("evolve_core", "rollback_core"):
        entry = agent.tool(name)
        assert entry is not None and entry.host_only  # `charter show` prints the flag
    rt = make_rt()
    recorder.kind = "run"  # "for the rest of the run": remembered per exact call
    session = open_session(plan, "notes-core", workspace=rt.workspace)
    promote = {"action": "promote", "run_id": "r1"}
    for _ in range(2):
        res = _call(notes_plan, rt, recorder, "evolve_core", promote, session=session)
        assert (res.status, res.rule) == ("unavailable", "host-only")
        assert "evolve_core (promote) is not available in this runtime" in res.content
    assert len(recorder.requests) == 1  # the second promote used the remembered answer
    res = _call(
        notes_plan,
        rt,
        recorder,
        "evolve_core",
        {"action": "discard", "run_id": "r1"},
        session=session,
    )
    assert res.rule == "host-only" and len(recorder.requests) == 2  # discard asked again
    res = _call(notes_plan, rt, recorder, "rollback_core", {}, session=session)
    assert res.rule == "host-only" and len(recorder.requests) == 3
    bad = _call(notes_plan, rt, recorder, "evolve_core", {"action": "review"}, session=session)
    # The schema gate enforces the tool's cross-field rules, before anyone is asked.
    assert (bad.status, bad.gate) == ("invalid", "schema")
    assert len(recorder.requests) == 3


def test_session_search_reads_only_the_current_session(
    notes_plan: Any, make_rt: Any, recorder: Any
) -> None:
    messages = [
        SimpleNamespace(role="system", content="you are a helper; the database is secret"),
        SimpleNamespace(role="user", content="Please set up the database schema."),
        SimpleNamespace(role="assistant", content="I will use SQLite for the database."),
        SimpleNamespace(role="tool", content="wrote schema.sql"),
    ]
    rt = make_rt(history=lambda: messages)
    res = _call(notes_plan, rt, recorder, "session_search", {"query": "DATABASE"})
    assert res.ok and [h["index"] for h in res.data["hits"]] == [1, 2]  # never the system prompt
    assert res.data["session_id"] == "run-a"
    one = _call(notes_plan, rt, recorder, "session_search", {"query": "database", "limit": 1})
    assert [h["index"] for h in one.data["hits"]] == [2]  # the most recent
    browse = _call(notes_plan, rt, recorder, "session_search", {"session_id": "run-a"})
    assert [h["index"] for h in browse.data["hits"]] == [1, 2, 3]
    none = _call(notes_plan, rt, recorder, "session_search", {"query": "kubernetes"})
    assert none.ok and none.data["hits"] == []
    other = _call(notes_plan, rt, recorder, "session_search", {"session_id": "run-b"})
    ghost = _call(notes_plan, rt, recorder, "session_search", {"session_id": "nope"})
    assert other.rule == ghost.rule == "unknown-session"
    assert other.content.replace("run-b", "X") == ghost.content.replace("nope", "X")
    bare = _call(notes_plan, make_rt(), recorder, "session_search", {"query": "x"})
    assert (bare.status, bare.rule) == ("unavailable", "no-history")


def _cron_cases() -> list[Any]:
    rows = []
    for line in (FIXTURES / "cron.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            expr, expected = line.split("\t")
            rows.append(pytest.param(expr, expected, id=expr))
    return rows


@pytest.mark.parametrize(("expr", "expected"), _cron_cases())
def test_cron_expressions(expr: str, expected: str) -> None:
    problem = cron_problem(expr)
    if expected == "ok":
        assert problem is None
    else:
        assert problem is not None and expected in problem


def test_schedule_manage_lifecycle(make_rt: Any) -> None:
    rt = make_rt()
    assert dispatch("schedule_manage", {"action": "list"}, rt).content.startswith("(no schedules)")
    bad = dispatch(
        "schedule_manage", {"action": "create", "schedule": "61 * * * *", "prompt": "p"}, rt
    )
    assert (bad.status, bad.rule) == ("invalid", "schedule-bad-cron")
    made = dispatch(
        "schedule_manage",
        {
            "action": "create",
            "schedule": "0  9 * * mon",
            "prompt": "weekly report",
            "schedule_id": "weekly",
        },
        rt,
    )
    assert made.ok and made.data["schedule"]["schedule"] == "0 9 * * mon"
    dup = dispatch(
        "schedule_manage",
        {"action": "create", "schedule": "* * * * *", "prompt": "p", "schedule_id": "weekly"},
        rt,
    )
    assert dup.rule == "schedule-exists"
    assert dispatch("schedule_manage", {"action": "disable", "schedule_id": "weekly"}, rt).ok
    assert dispatch(
        "schedule_manage",
        {
            "action": "update",
            "schedule_id": "weekly",
            "prompt": "daily report",
            "schedule": "0 9 * * *",
        },
        rt,
    ).ok
    listed = dispatch("schedule_manage", {"action": "list"}, rt)
    assert listed.content == "weekly [disabled] 0 9 * * *: daily report"
    stored = json.loads((rt.workspace / ".charter" / "schedules" / "default.json").read_text())
    assert stored["schedules"][0]["enabled"] is False
    assert dispatch("schedule_manage", {"action": "delete", "schedule_id": "weekly"}, rt).ok
    gone = dispatch("schedule_manage", {"action": "enable", "schedule_id": "weekly"}, rt)
    assert (gone.status, gone.rule) == ("error", "unknown-schedule")
