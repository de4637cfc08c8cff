"""The two front doors: ``charter.compiler`` and ``charter.runtime``.

Their ``__all__`` is the API embedders, hooks, ``serve`` and the benches use.
It is pinned here, so adding or removing a name is a deliberate change to this
file, and importing either package must stay free (names load on first use).
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

RUNTIME_API = [
    "AuditLog",
    "CharterError",
    "DoctorReport",
    "EXIT_CODES",
    "HOOK_TIME_LIMITS",
    "HookExam",
    "HookOptions",
    "LaunchRequest",
    "LaunchResult",
    "LockWriteError",
    "Outcome",
    "PERMISSIONS",
    "Plan",
    "PlanError",
    "PreparedPlan",
    "Resolver",
    "RunRefused",
    "SandboxRefused",
    "ServeRefused",
    "ServeRequest",
    "Session",
    "SessionError",
    "ShellPolicy",
    "ShellVerdict",
    "SystemResolver",
    "ToolCall",
    "ToolResult",
    "UrlPolicy",
    "UrlVerdict",
    "VERSION",
    "announce_servers",
    "answer_once",
    "compare_profiles",
    "decide",
    "decide_claude_code_stdin",
    "decide_gemini_cli_stdin",
    "decide_path",
    "describe_profile",
    "examine_hooks",
    "execute",
    "fire_due_schedules",
    "judge_command",
    "launch_run",
    "load_for_agents",
    "load_plan",
    "load_plan_bytes",
    "open_session",
    "plan_of",
    "prepare",
    "read_events",
    "relock_agent",
    "run_contained",
    "run_server",
    "verify_log",
    "wants_colour",
]

COMPILER_API = [
    "CompileOptions",
    "CompileResult",
    "Diagnostic",
    "Project",
    "RULES",
    "check_project",
    "compile_project",
    "load_project",
    "main",
    "mcp_lock_targets",
    "shell_policy_from_config",
]

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("package", "expected"),
    [("charter.runtime", RUNTIME_API), ("charter.compiler", COMPILER_API)],
)
def test_all_is_pinned_and_every_name_resolves(package: str, expected: list[str]) -> None:
    module = importlib.import_module(package)
    assert module.__all__ == expected
    assert sorted(module._EXPORTS) == expected
    for name in expected:
        value = getattr(module, name)
        # The facade hands out the defining module's object, not a copy
        # ("module:attr" names the object another name there).
        where, _, attr = module._EXPORTS[name].partition(":")
        assert value is getattr(importlib.import_module(where), attr or name)
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        module.not_a_name  # noqa: B018


@pytest.mark.parametrize("package", ["charter.runtime", "charter.compiler"])
def test_no_api_name_is_also_a_submodule(package: str) -> None:
    # Importing a submodule sets the package attribute of its name, which
    # would shadow an API name of the same spelling.
    import pkgutil

    module = importlib.import_module(package)
    submodules = {m.name for m in pkgutil.iter_modules(module.__path__)}
    assert not submodules & set(module.__all__)


@pytest.mark.parametrize("package", ["charter.runtime", "charter.compiler"])
def test_importing_a_front_door_loads_nothing_else(package: str) -> None:
    # A fresh interpreter: which charter modules does the bare import load?
    code = (
        "import json, sys\n"
        f"import {package}\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('charter'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    loaded = set(json.loads(out.stdout))
    assert loaded <= {"charter", "charter.compiler", "charter.runtime"}, loaded


def test_the_runtime_example_decides_a_call(tmp_path: Path) -> None:
    # The embedding shown in charter.runtime's docstring, run for real.
    from charter.compiler import compile_project, load_project
    from charter.runtime import ToolCall, decide, open_session, prepare

    result = compile_project(load_project(REPO / "blueprints" / "coder"))
    assert result.plan is not None, [str(d) for d in result.diagnostics]
    (tmp_path / "README.md").write_text("hello\n")
    session = open_session(prepare(result.plan), "coder", workspace=tmp_path)
    outcome = decide(session, ToolCall("read_file", {"path": "README.md"}))
    assert outcome.decision == "allow"
    outside = decide(session, ToolCall("read_file", {"path": "/etc/shadow"}))
    assert outside.decision == "deny"


def test_the_cli_reaches_the_runtime_only_through_its_front_door() -> None:
    # A verb parses, calls charter.runtime (or reads the plan model, the
    # contract both halves share) and prints: it never reaches into the
    # runtime's subpackages, so they can move without the CLI noticing.
    import ast

    reached: list[str] = []
    for path in sorted((REPO / "compiler" / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [node.module]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            for target in targets:
                inside = target.startswith("charter.runtime.")
                if inside and not target.startswith("charter.runtime.plan"):
                    reached.append(f"{path.name}:{node.lineno} {target}")
    assert reached == []
