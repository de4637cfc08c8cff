"""The runtime stands alone: deciding never imports the compiler; the capability gate."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from charter.runtime.gates import decide
from charter.runtime.plan import Grant, ToolEntry
from charter.runtime.results import ToolCall

REPO = Path(__file__).resolve().parents[2]

PROBE = textwrap.dedent(
    """
    import json, sys
    import charter.runtime.gates as gates
    from charter.runtime.plan.loader import load_plan
    from charter.runtime.results import ToolCall
    from charter.runtime.policy.session import open_session
    from charter.runtime.hooks.claude_code import decide_event

    session = open_session(load_plan(sys.argv[1]), "a", workspace=sys.argv[2])
    outs = [gates.decide(session, ToolCall(t, a)).decision for t, a in (
        ("read_file", {"path": "notes.txt"}),
        ("shell", {"command": "ls | wc -l"}),
        ("write_file", {"path": "x", "content": ""}),
    )]
    event = json.dumps({"hook_event_name": "PreToolUse", "cwd": sys.argv[2],
                        "tool_name": "Read", "tool_input": {"file_path": "notes.txt"}})
    outs.append(decide_event(event.encode(), plan_path=sys.argv[1])
                ["hookSpecificOutput"]["permissionDecision"])
    bad = sorted(m for m in sys.modules if m.startswith("charter.compiler"))
    heavy = sorted(m for m in ("httpx", "mcp", "anyio") if m in sys.modules)
    print(json.dumps({"decisions": outs, "compiler": bad, "heavy": heavy}))
    """
)


def test_deciding_never_imports_the_compiler(
    kit: SimpleNamespace, workspace: Path, tmp_path: Path
) -> None:
    plan = kit.make_plan({"s": {"read_file": "allow", "shell": "ask", "write_file": "ask"}})
    path = tmp_path / "plan.json"
    path.write_text(plan.to_json())
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(path), str(workspace)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    import json

    got = json.loads(proc.stdout)
    assert got == {"decisions": ["allow", "allow", "ask", "allow"], "compiler": [], "heavy": []}


# CLI helpers the runtime-only verbs share; each imports only the standard
# library at module level (_plan_arg loads the compiler only when it is given
# a project directory to compile).
_CLI_HELPERS = (
    "charter.compiler.cli._plan_arg",
    "charter.compiler.cli._jsonl",
    "charter.compiler.cli._options",
    "charter.compiler.cli._table",
)


def _top_level_imports(path: Path) -> list[str]:
    mods: list[str] = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            mods += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            mods.append(node.module)
    return mods


def test_cli_verbs_import_only_the_runtime() -> None:
    """check, check-path, hook and audit: no compiler module but the shared
    CLI helpers, no network stack."""
    for name in ("check.py", "check_path.py", "hook.py", "audit_cmd.py"):
        tree = ast.parse((REPO / "compiler" / "cli" / name).read_text())
        for node in ast.walk(tree):
            mods: list[str] = []
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                mods = [node.module]
            for m in mods:
                assert not m.startswith("charter.compiler") or m in _CLI_HELPERS, (name, m)
                assert m.split(".")[0] not in ("httpx", "mcp", "anyio"), (name, m)
    for helper in _CLI_HELPERS:
        path = REPO / "compiler" / "cli" / (helper.rsplit(".", 1)[1] + ".py")
        for m in _top_level_imports(path):
            # another helper, held to the same rule, or the standard library
            assert not m.startswith("charter") or m in _CLI_HELPERS, (helper, m)


def test_check_with_a_plan_file_loads_no_compiler_module(
    kit: SimpleNamespace, workspace: Path, tmp_path: Path
) -> None:
    """Given a plan file (not a project), `charter check` never imports the
    compiler proper: only the CLI package, the verb and its helpers."""
    plan = kit.make_plan({"s": {"read_file": "allow"}})
    path = tmp_path / "plan.json"
    path.write_text(plan.to_json())
    code = textwrap.dedent(
        """
        import io, json, sys, contextlib
        from charter.compiler.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            rc = main(sys.argv[1:])
        mods = sorted(m for m in sys.modules if m.startswith("charter.compiler"))
        print(json.dumps({"rc": rc, "mods": mods}))
        """
    )
    argv = ["check", str(path), "--agent", "a", "--workspace", str(workspace), "read_file"]
    proc = subprocess.run(
        [sys.executable, "-c", code, *argv, '{"path": "notes.txt"}'],
        capture_output=True,
        text=True,
        timeout=60,
    )
    import json

    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["rc"] == 0, proc.stderr
    allowed = {
        "charter.compiler",
        "charter.compiler.cli",
        "charter.compiler.cli.check",
        *_CLI_HELPERS,
    }
    assert set(got["mods"]) <= allowed, got["mods"]


def test_capability_gate(kit: SimpleNamespace, session_for: Any) -> None:
    perms = {"read_file": "allow", "write_file": "allow"}
    core = kit.make_plan({"s": perms}, kind="core", grants=["fs.read"])
    s = session_for(core)
    assert decide(s, ToolCall("read_file", {"path": "notes.txt"})).decision == "allow"
    out = decide(s, ToolCall("write_file", {"path": "x", "content": ""}))
    assert (out.decision, out.gate, out.rule) == ("deny", "capability", "capability-not-granted")
    wildcard = kit.make_plan({"s": perms}, kind="combined", grants=["fs.read", "fs.write:*"])
    out = decide(session_for(wildcard), ToolCall("write_file", {"path": "x", "content": ""}))
    assert out.gate == "capability"  # "fs.write:*" covers "fs.write:x", not "fs.write"
    # A blueprint-only agent declares no grants and is not checked.
    bp = kit.make_plan({"s": perms}, kind="blueprint")
    assert decide(session_for(bp), ToolCall("write_file", {"path": "x", "content": ""})).gate != (
        "capability"
    )


def test_slot_grants_cover_only_their_authored_tool(kit: SimpleNamespace, session_for: Any) -> None:
    from charter.runtime.plan import AuthoredTool

    def authored(name: str) -> ToolEntry:
        return kit.authored_tool(
            name,
            name,
            input_schema='{"type":"object"}',
            capability="notes.write",
            authored=AuthoredTool(
                tool_id=name,
                directory=f"tools/{name}",
                module=f"tools/{name}/tool.py",
                entrypoint="tool:run",
                module_sha256="0" * 64,
            ),
        )

    plan = kit.make_plan(
        {"s": {"mine": "allow", "theirs": "allow"}},
        tools=[authored("mine"), authored("theirs")],
        kind="core",
        grants=[Grant(capability="notes.write", slot="tools/mine")],
    )
    s = session_for(plan)
    assert decide(s, ToolCall("mine", {})).decision == "allow"
    assert decide(s, ToolCall("theirs", {})).rule == "capability-not-granted"


def test_secret_bindings_need_the_exact_grant(kit: SimpleNamespace, session_for: Any) -> None:
    perms = {"terminal": "ask"}
    binding = {"command": "gh pr list", "secret_bindings": [{"source": "env:GH_TOKEN"}]}
    exact = kit.make_plan(
        {"s": perms}, kind="core", grants=["terminal.exec", "secret.bind:GH_TOKEN"]
    )
    assert decide(session_for(exact), ToolCall("terminal", binding)).decision == "ask"
    wild = kit.make_plan({"s": perms}, kind="core", grants=["terminal.exec", "secret.bind:*"])
    out = decide(session_for(wild), ToolCall("terminal", binding))
    assert (out.decision, out.gate, out.rule) == ("deny", "capability", "secret-binding-refused")
    bp = kit.make_plan({"s": perms})
    out = decide(session_for(bp), ToolCall("terminal", binding))
    assert out.rule == "secret-binding-refused"
    forbidden = {"command": "ls", "secret_bindings": [{"source": "env:GH_TOKEN", "target": "PATH"}]}
    out = decide(session_for(exact), ToolCall("terminal", forbidden))
    assert out.rule == "secret-binding-refused" and "PATH" in out.reason
    background = {**binding, "background": True}
    out = decide(session_for(exact), ToolCall("terminal", background))
    assert out.decision == "deny"


def test_load_for_agents_fast_path_and_fallback(kit: SimpleNamespace, tmp_path: Path) -> None:
    import json as _json

    import pytest

    from charter.runtime.plan.loader import PlanError
    from charter.runtime.plan.prepared import load_for_agents

    plan = kit.make_plan({"s": {"read_file": "allow"}})
    body = plan.body.model_copy(
        update={"agents": (*plan.body.agents, plan.body.agents[0].model_copy(update={"name": "b"}))}
    )
    from charter.runtime.plan import Plan

    two = Plan.seal(body)
    canonical = tmp_path / "plan.json"
    canonical.write_text(two.to_json())
    fast = load_for_agents(canonical, ["b"])
    assert fast.agent_names == ("b",)
    assert fast.plan.body.agents == (two.body.agents[1],) and set(fast.agents) == {"b"}
    assert fast.plan.body.shell == two.body.shell and fast.plan.digest == two.digest
    every = load_for_agents(canonical, None)
    assert every.agent_names == ("a", "b") and set(every.agents) == {"a", "b"}
    # An agent the plan does not hold: the full path, which knows every name.
    missing = load_for_agents(canonical, ["zz"])
    assert missing.agents == {} and missing.agent_names == ("a", "b")
    # Pretty-printed: not the compiler's exact bytes, so the full loader decides.
    pretty = tmp_path / "pretty.json"
    pretty.write_text(_json.dumps(_json.loads(two.to_json()), indent=2))
    slow = load_for_agents(pretty, ["b"])
    assert set(slow.agents) == {"b"} and slow.agent_names == ("a", "b")
    # Edited by hand: the digest no longer matches, on either path.
    for src in (canonical, pretty):
        edited = tmp_path / f"edited-{src.name}"
        edited.write_text(
            src.read_text()
            .replace('"permission":"allow"', '"permission":"ask"')
            .replace('"permission": "allow"', '"permission": "ask"')
        )
        with pytest.raises(PlanError, match="digest mismatch"):
            load_for_agents(edited, ["a"])
    # Written by another version of the models: its own digest matches its
    # bytes, but these models would write it differently, so it is refused.
    stale = tmp_path / "stale.json"
    raw = _json.loads(two.to_json())
    raw["body"]["agents"][1]["limits"]["retired_field"] = 1
    import hashlib

    from charter.runtime.plan import canonical_json

    raw["digest"] = "sha256:" + hashlib.sha256(canonical_json(raw["body"]).encode()).hexdigest()
    stale.write_text(canonical_json(raw) + "\n")
    with pytest.raises(PlanError, match="does not match the plan schema"):
        load_for_agents(stale, ["b"])
    truncated = tmp_path / "truncated.json"
    truncated.write_bytes(canonical.read_bytes()[:-40])
    with pytest.raises(PlanError, match="truncated"):
        load_for_agents(truncated, ["a"])
