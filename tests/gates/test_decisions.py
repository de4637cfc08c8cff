"""Golden decisions: one line of data per case (tests/gates/data/decisions.txt)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from charter.runtime.gates import decide
from charter.runtime.plan import Plan
from charter.runtime.results import ToolCall

DATA = Path(__file__).parent / "data" / "decisions.txt"


def _cases() -> list[Any]:
    out = []
    for n, line in enumerate(DATA.read_text("utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        stage, flags, tool, args, dec, gate, rule = line.split("\t")
        out.append(pytest.param(stage, flags, tool, args, dec, gate, rule, id=f"L{n}-{tool}"))
    return out


def standard_plan(kit: SimpleNamespace) -> Plan:
    d = kit.decision
    loose = kit.authored_tool(
        "loose",
        "a tool whose schema validation the plan turned off",
        input_schema=None,
        validation_note="schema could not be checked at compile time",
    )
    return kit.make_plan(
        {
            "work": {
                "read_file": "allow",
                "read_files": "allow",
                "list_dir": "allow",
                "search_files": "allow",
                "write_file": "ask",
                "edit_file": d("ask", liftable=False),
                "patch": "deny",
                "shell": "ask",
                "terminal": "ask",
                "loose": "allow",
            },
            "readonly": {"read_file": "allow", "shell": "ask", "write_file": "deny"},
            "denyshell": {"shell": "deny"},
            "shellallow": {"shell": "allow", "write_file": "allow"},
            "shellpinned": {"shell": d("ask", liftable=False)},
            "web": {"web_fetch": "allow", "web_extract": "ask"},
        },
        tools=[loose],
        unattended={
            "work": [
                "read_file",
                "read_files",
                "list_dir",
                "search_files",
                "write_file",
                "patch",
                "shell",
                "terminal",
                "loose",
            ]
        },
    )


@pytest.mark.parametrize("stage,flags,tool,args,dec,gate,rule", _cases())
def test_decision(
    kit: SimpleNamespace,
    session_for: Any,
    stage: str,
    flags: str,
    tool: str,
    args: str,
    dec: str,
    gate: str,
    rule: str,
) -> None:
    kw: dict[str, Any] = {"stage": stage, "allow": []}
    for f in [] if flags == "-" else flags.split(","):
        if f == "yolo":
            kw["yolo"] = True
        elif f == "unattended":
            kw["unattended"] = True
        elif f.startswith("allow="):
            kw["allow"].append(f[len("allow=") :])
        else:
            raise AssertionError(f"unknown flag {f!r}")
    session = session_for(standard_plan(kit), **kw)
    out = decide(session, ToolCall(tool, json.loads(args)))
    got = (out.decision, out.gate, out.rule if rule != "-" else "-")
    assert got == (dec, gate, rule), out.reason
    if out.decision == "deny":
        result = out.refusal()
        assert result.gate == gate and not result.executed
        assert result.content.startswith("[")


def test_schema_violations_name_paths_and_cap_at_three(
    kit: SimpleNamespace, session_for: Any
) -> None:
    session = session_for(standard_plan(kit))
    out = decide(
        session,
        ToolCall("search_files", {"query": 1, "path": 2, "target": "x", "max_results": 0}),
    )
    assert out.gate == "schema" and out.status == "invalid"
    assert "$.max_results" in out.reason and "$.path" in out.reason
    assert out.reason.endswith("(and 1 more)")
    assert out.reason.count("$.") == 3


def test_validation_off_in_plan_still_needs_an_object(
    kit: SimpleNamespace, session_for: Any
) -> None:
    session = session_for(standard_plan(kit))
    out = decide(session, ToolCall("loose", ["not", "an", "object"]))  # type: ignore[arg-type]
    assert (out.decision, out.rule) == ("deny", "arguments-not-object")


def test_remote_ref_is_never_fetched(kit: SimpleNamespace, session_for: Any) -> None:
    schema = json.dumps({"$ref": "https://example.invalid/schema.json"})
    remote = kit.authored_tool("remote", "schema with a remote $ref", input_schema=schema)
    plan = kit.make_plan({"s": {"remote": "allow"}}, tools=[remote])
    out = decide(session_for(plan), ToolCall("remote", {"a": 1}))
    assert (out.decision, out.gate, out.rule) == ("deny", "schema", "schema-unusable")


def test_invalid_schema_fails_closed(kit: SimpleNamespace, session_for: Any) -> None:
    schema = json.dumps({"type": "no-such-type"})
    broken = kit.authored_tool("broken", "schema that does not compile", input_schema=schema)
    plan = kit.make_plan({"s": {"broken": "allow"}}, tools=[broken])
    out = decide(session_for(plan), ToolCall("broken", {}))
    assert (out.decision, out.rule) == ("deny", "schema-unusable")
