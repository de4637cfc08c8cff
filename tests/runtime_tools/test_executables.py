"""charter.runtime.tools.executables names, before a shell call runs, what
the shell tool itself resolves when it runs it (S000-40)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from charter.runtime.policy.env import build_env
from charter.runtime.tools.executables import UNKNOWN, Executables, call_executables
from charter.runtime.tools.registry import ToolRuntime, dispatch


@pytest.fixture
def rt(make_rt: Any, tmp_path: Path) -> ToolRuntime:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "mytool").write_text("#!/bin/sh\necho mytool\n")
    (bindir / "mytool").chmod(0o755)
    env = build_env(os.environ, home=tmp_path / "home", tz="UTC")
    env["PATH"] = f"{bindir}:{env['PATH']}"
    runtime: ToolRuntime = make_rt(env=env, shell="sh")
    sub = runtime.workspace / "sub"
    sub.mkdir()
    (sub / "run.sh").write_text("#!/bin/sh\necho run\n")
    (sub / "run.sh").chmod(0o755)
    return runtime


def _before(rt: ToolRuntime, tool: str, args: dict[str, Any]) -> Executables:
    return call_executables(args, tool=tool, shell=rt.shell, env=rt.env, workspace=rt.workspace)


@pytest.mark.parametrize(
    "tool,args",
    [
        ("shell", {"command": "mytool"}),
        ("terminal", {"command": "mytool", "cwd": "sub"}),
        ("terminal", {"command": "./run.sh", "cwd": "sub"}),
        ("shell", {"command": "./run.sh"}),  # the shell tool runs at the root: not found
        ("terminal", {"command": "MODE=x mytool", "env": {"MODE": "y"}}),
        ("terminal", {"command": "$X", "env": {"X": "mytool"}}),  # expands: unknown
        ("shell", {"command": "echo hi"}),  # a builtin: the shell runs it
    ],
)
def test_agrees_with_what_the_call_resolves(
    rt: ToolRuntime, tool: str, args: dict[str, Any]
) -> None:
    before = _before(rt, tool, args)
    result = dispatch(tool, args, rt)
    assert result.executed and "shell" in result.data, result.content
    assert before == Executables(result.data["shell"], result.data["command_executable"])
    assert before.shell is not None and before.shell.endswith("/sh")


def test_expanding_and_unresolvable_commands_name_no_program(rt: ToolRuntime) -> None:
    assert _before(rt, "shell", {"command": "$CMD --flag"}).command is None
    assert _before(rt, "shell", {"command": "no-such-program-here"}).command is None
    assert _before(rt, "shell", {"command": "mytool"}).command == str(
        Path(rt.env["PATH"].split(":")[0]) / "mytool"
    )


def test_what_the_call_refuses_names_nothing(rt: ToolRuntime) -> None:
    for tool, args in (
        ("terminal", {"command": "mytool", "cwd": "../"}),  # outside the workspace
        ("terminal", {"command": "mytool", "cwd": "missing"}),
        ("terminal", {"command": "mytool", "env": {"PATH": "/tmp"}}),  # a forbidden overlay
        ("shell", {"command": "  "}),
        ("shell", {"command": "a\x00b"}),
        ("shell", {}),
    ):
        assert _before(rt, tool, args) == UNKNOWN, args
    assert not dispatch("terminal", {"command": "mytool", "cwd": "../"}, rt).executed


def test_bindings_do_not_change_the_search_path(rt: ToolRuntime) -> None:
    # A binding can never target PATH, so leaving bindings out of the
    # environment used for resolving cannot change the answer.
    args = {"command": "mytool", "secret_bindings": [{"source": "env:TOK", "target": "PATH"}]}
    assert _before(rt, "terminal", args) == _before(rt, "terminal", {"command": "mytool"})
    refused = dispatch("terminal", args, rt)
    assert refused.status == "denied" and "PATH" in refused.content
