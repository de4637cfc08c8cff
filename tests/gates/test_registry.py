"""The one tool registry: an implementation cannot be registered without
saying which arguments of each tool it serves are workspace paths, and the
dispatch gate runs a built-in only when the plan confined those arguments."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from charter.compiler.catalog.builtin import builtin_tools
from charter.runtime.gates import execute
from charter.runtime.plan import PathArg
from charter.runtime.redact import Redactor
from charter.runtime.results import ToolCall, ToolResult
from charter.runtime.tools.registry import (
    IMPLEMENTATIONS,
    NO_PATHS,
    Registry,
    RegistryError,
    ToolRuntime,
    register,
)


def _run(
    call_args: Mapping[str, Any], rt: Any, *, tool: str | None = None, approved: bool = False
) -> ToolResult:
    return ToolResult("ok", f"ran {tool}")


def test_a_registration_must_say_which_arguments_are_paths() -> None:
    with pytest.raises(TypeError):
        register("x.run", _run)  # type: ignore[call-arg]
    with pytest.raises(RegistryError, match="serves at least one tool"):
        register("x.run", _run, serves={})
    with pytest.raises(RegistryError, match="sequence of PathArg"):
        register("x.run", _run, serves={"x_tool": "path"})  # type: ignore[dict-item]
    with pytest.raises(RegistryError, match="sequence of PathArg"):
        register("x.run", _run, serves={"x_tool": PathArg(arg="p", op="read")})  # type: ignore[dict-item]
    twice = (PathArg(arg="p", op="read"), PathArg(arg="p", op="write"))
    with pytest.raises(RegistryError, match="twice"):
        register("x.run", _run, serves={"x_tool": twice})
    with pytest.raises(RegistryError, match="impl key"):
        register("Not A Key", _run, serves={"x_tool": NO_PATHS})
    ok = register("x.run", _run, serves={"x_tool": NO_PATHS})
    assert ok.serves == {"x_tool": ()}


def test_a_tool_is_served_once_and_a_key_registered_once() -> None:
    a = register("x.a", _run, serves={"x_tool": NO_PATHS})
    b = register("x.b", _run, serves={"x_tool": NO_PATHS})
    with pytest.raises(RegistryError, match="served by"):
        Registry([a, b])
    with pytest.raises(RegistryError, match="registered twice"):
        Registry([a, a])
    # A run's own registration replaces the package's under the same key.
    mine = register("fs.read", _run, serves={"read_file": NO_PATHS})
    over = IMPLEMENTATIONS.overlay([mine])
    assert over.registration("fs.read") is mine and "fs.write" in over


def test_every_built_in_is_served_with_the_path_arguments_the_catalog_pins() -> None:
    # The compiler pins the catalog's path arguments into the plan; the
    # dispatch gate refuses a built-in whose implementation reads others.
    for name, tool in builtin_tools().items():
        reg = IMPLEMENTATIONS.registration(tool.impl)
        if reg is None:
            continue  # bound to a run (human.*, agents.*): registered by the run loop
        assert name in reg.serves, f"{tool.impl} does not serve {name}"
        assert reg.serves[name] == tool.path_args, name


def test_a_plan_that_confined_other_arguments_is_not_run(
    kit: SimpleNamespace, session_for: Any, workspace: Path
) -> None:
    entry = kit.builtin("read_file").model_copy(
        update={"path_args": (PathArg(arg="other", op="read"),)}
    )
    plan = kit.make_plan({"s": {"read_file": "allow"}}, tools=[entry])
    rt = ToolRuntime(workspace=workspace, redactor=Redactor(), shell="/bin/sh", timeout_s=10)
    call = ToolCall("read_file", {"path": "notes.txt"})
    result = execute(session_for(plan), call, None, kit.Recorder(), runtime=rt)
    assert (result.status, result.gate, result.rule) == (
        "unavailable",
        "dispatch",
        "path-args-mismatch",
    )
    assert "hello" not in result.content
