"""Leviath's environment tools, fan_out, and script tools at run time.

The environment tools run for real; the parts that depend on the platform
are pure functions, checked here for Windows as well as Unix. A script tool
and fan_out go through every gate and are then answered, never run."""

from __future__ import annotations

import json
import os
import stat
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from charter.compiler.compile import CompileOptions, compile_project
from charter.compiler.frontends.project import load_project
from charter.runtime.gates import decide, execute
from charter.runtime.policy.approval import ApprovalAnswer, ApprovalRequest
from charter.runtime.policy.session import open_session
from charter.runtime.results import ToolCall
from charter.runtime.tools.environment import (
    describe_environment,
    describe_instant,
    describe_locale,
    describe_system,
    split_locale,
)
from charter.runtime.tools.registry import ToolRuntime, dispatch


def _json(content: str) -> Any:
    return json.loads(content)


# -- pure parts ---------------------------------------------------------------------------


def test_an_instant_is_described_in_both_zones_with_the_local_calendar() -> None:
    utc = datetime(2026, 12, 31, 23, 30, tzinfo=UTC)
    local = utc.astimezone(timezone(timedelta(hours=2)))
    d = describe_instant(utc, local, "Europe/Athens")
    assert d["utc"] == "2026-12-31T23:30:00Z"
    assert d["local"] == "2027-01-01T01:30:00+02:00" and d["utc_offset"] == "+02:00"
    # The calendar is the local one: the user already lives in the new year.
    assert (d["date"], d["weekday"], d["day_of_year"]) == ("2027-01-01", "Friday", 1)
    assert d["iso_week"] == "2026-W53" and d["unix"] == int(utc.timestamp())


def test_system_facts_follow_the_platform_family() -> None:
    win = describe_system(
        os_name="windows",
        release="11",
        arch="AMD64",
        family="windows",
        cpus=8,
        host=None,
        disk=None,
    )
    unix = describe_system(
        os_name="linux", release="6", arch="x86_64", family="unix", cpus=2, host="h", disk=(1, 2)
    )
    assert (win["path_separator"], win["directory_separator"], win["line_ending"]) == (
        ";",
        "\\",
        "crlf",
    )
    assert (unix["path_separator"], unix["line_ending"]) == (":", "lf")
    assert win["disk"] == {"available_bytes": None, "total_bytes": None}
    assert unix["disk"] == {"available_bytes": 1, "total_bytes": 2}


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("en_US.UTF-8", ("en-US", "en", "US")),
        ("de-DE", ("de-DE", "de", "DE")),
        ("fr", ("fr", "fr", None)),
        ("sr_RS@latin", ("sr-RS", "sr", "RS")),
        ("C.UTF-8", None),
        ("POSIX", None),
        ("", None),
    ],
)
def test_locale_tags(tag: str, expected: tuple[str, str, str | None] | None) -> None:
    assert split_locale(tag) == expected
    described = describe_locale(tag or None)
    assert described["locale"] == (expected[0] if expected else None)


def test_environment_lists_credential_names_but_never_their_values() -> None:
    d = describe_environment(
        workspace="/w",
        home="/w/.home",
        temp="/tmp",
        family="unix",
        command_env={"PATH": "/usr/bin:/bin", "LANG": "C", "STRAY_TOKEN": "t0ken-value"},
        runtime_env_names=["OPENAI_API_KEY", "EDITOR", "GITHUB_TOKEN"],
    )
    assert d["environment_variables"] == {"LANG": "C", "PATH": "/usr/bin:/bin"}
    assert d["withheld_variables"] == ["GITHUB_TOKEN", "OPENAI_API_KEY", "STRAY_TOKEN"]
    assert d["path_entries"] == ["/usr/bin", "/bin"]
    assert "t0ken-value" not in json.dumps(d) and "EDITOR" not in json.dumps(d)
    windows = describe_environment(
        workspace="C:\\w",
        home=None,
        temp="C:\\t",
        family="windows",
        command_env={"PATH": "C:\\bin;D:\\tools"},
        runtime_env_names=[],
    )
    assert windows["path_entries"] == ["C:\\bin", "D:\\tools"]


# -- the tools as dispatched --------------------------------------------------------------


@pytest.fixture
def rt(tmp_path: Path) -> ToolRuntime:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "frob"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    ws = tmp_path / "ws"
    (ws / "scripts").mkdir(parents=True)
    build = ws / "scripts" / "build"
    build.write_text("#!/bin/sh\n")
    build.chmod(build.stat().st_mode | stat.S_IXUSR)
    return ToolRuntime(
        workspace=ws,
        env={"PATH": str(bin_dir), "HOME": str(ws / ".home")},
        secret_env={"ANTHROPIC_API_KEY": "sk-ant-secretvalue0123456789", "PATH": "/x"},
    )


def test_current_time_reports_the_real_clock(rt: ToolRuntime) -> None:
    before = int(datetime.now(UTC).timestamp())
    result = dispatch("current_time", {}, rt)
    assert result.ok
    assert before - 1 <= _json(result.content)["unix"] <= before + 5


def test_which_command_searches_the_path_commands_see(rt: ToolRuntime) -> None:
    found = _json(dispatch("which_command", {"command": "frob"}, rt).content)
    assert found["found"] and found["path"].endswith("/bin/frob")
    # ls is on the runtime's own PATH but not on the one commands get here.
    assert _json(dispatch("which_command", {"command": "ls"}, rt).content)["found"] is False


def test_which_command_looks_up_paths_inside_the_workspace_only(rt: ToolRuntime) -> None:
    inside = _json(dispatch("which_command", {"command": "./scripts/build"}, rt).content)
    assert inside["found"]
    outside = dispatch("which_command", {"command": "../bin/frob"}, rt)
    assert outside.status == "denied" and "outside the workspace" in outside.content
    absolute = dispatch("which_command", {"command": "/etc/passwd"}, rt)
    assert absolute.status == "denied"


def test_environment_info_shows_what_commands_see_and_withholds_secrets(rt: ToolRuntime) -> None:
    result = dispatch("environment_info", {}, rt)
    d = _json(result.content)
    assert set(d["environment_variables"]) == {"HOME", "PATH"}
    assert d["withheld_variables"] == ["ANTHROPIC_API_KEY"]
    assert "secretvalue" not in result.content and "secretvalue" not in (result.display or "")


def test_system_and_locale_info_answer(rt: ToolRuntime) -> None:
    system = _json(dispatch("system_info", {}, rt).content)
    assert system["cpu_count"] >= 1 and system["os_family"] in ("unix", "windows")
    assert set(_json(dispatch("locale_info", {}, rt).content)) == {
        "locale",
        "language",
        "region",
        "raw",
    }


def test_fan_out_is_answered_not_run(rt: ToolRuntime) -> None:
    result = dispatch("fan_out", {"items": [{"id": "a", "context": {}}]}, rt)
    assert result.status == "unavailable" and result.content.startswith("[unavailable]")
    assert "fan_out cannot run here" in result.content


# -- through the gates --------------------------------------------------------------------

BLUEPRINT = """[agent]
name = "a"

[tool_permissions]
lookup = "allow"

[stages.s]
mode = "autonomous"
available_tools = ["lookup", "runtime_info", "current_time"]
"""
SCRIPT = '// @tool lookup\n// @param word string required "The word"\nparams.word\n'


class _Yes:
    def request(self, req: ApprovalRequest) -> ApprovalAnswer:
        return ApprovalAnswer("once", source="test")


def _session(tmp_path: Path, **kw: Any) -> Any:
    root = tmp_path / "agent"
    (root / "tools").mkdir(parents=True)
    (root / "agent.leviath").write_text(BLUEPRINT)
    (root / "tools" / "lookup.rhai").write_text(SCRIPT)
    result = compile_project(
        load_project(root, use_default_config=False), CompileOptions("posix", "/bin/bash")
    )
    assert result.plan is not None, [str(d) for d in result.diagnostics if d.is_error]
    ws = tmp_path / "ws"
    ws.mkdir()
    return open_session(result.plan, "a", workspace=ws, run_id="run-1", **kw), ws


def test_a_script_tool_is_decided_by_the_plan_then_run_by_the_interpreter(tmp_path: Path) -> None:
    session, ws = _session(tmp_path)
    outcome = decide(session, ToolCall("lookup", {"word": "x"}))
    # The blueprint's allow is clamped to the default for a tool the user did
    # not configure: a script tool asks, as in Leviath.
    assert outcome.decision == "ask"
    # The script's own schema applies: a missing argument is refused first.
    bad = decide(session, ToolCall("lookup", {}))
    assert bad.decision == "deny" and bad.gate == "schema"
    result = execute(
        session, ToolCall("lookup", {"word": "x"}), None, _Yes(), runtime=ToolRuntime(workspace=ws)
    )
    # Approved, it runs: the script's value (its params.word) is the result.
    assert result.status == "ok", result.content
    assert result.content == "x"


def test_runtime_info_reports_the_session(tmp_path: Path) -> None:
    session, ws = _session(tmp_path, unattended=True)
    result = execute(
        session, ToolCall("runtime_info", {}), None, _Yes(), runtime=ToolRuntime(workspace=ws)
    )
    d = _json(result.content)
    assert (d["agent"], d["stage"], d["run_id"], d["attended"]) == ("a", "s", "run-1", False)
    assert d["max_iterations"] == 50 and "lookup" in d["tools_offered"]


def test_environment_tools_default_to_allow(tmp_path: Path) -> None:
    session, _ = _session(tmp_path)
    assert decide(session, ToolCall("current_time", {})).decision == "allow"
    assert os.environ.get("CHARTER_NEVER_SET") is None


def test_charter_check_decides_a_script_tool_from_the_plan(tmp_path: Path) -> None:
    from charter.compiler.cli import main

    root = tmp_path / "agent"
    (root / "tools").mkdir(parents=True)
    (root / "agent.leviath").write_text(BLUEPRINT)
    (root / "tools" / "lookup.rhai").write_text(SCRIPT)
    plan = tmp_path / "plan.json"
    assert main(["compile", str(root), "--no-user-config", "-o", str(plan)]) == 0
    base = ["check", str(plan), "--agent", "a", "--workspace", str(tmp_path)]
    assert main([*base, "lookup", '{"word": "x"}']) == 3  # ask: nobody configured it
    assert main([*base, "lookup", "{}"]) == 1  # the script's own schema refuses it
    assert main([*base, "--yolo", "lookup", '{"word": "x"}']) == 0
