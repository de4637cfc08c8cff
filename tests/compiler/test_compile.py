"""The compiler end to end on small projects written by each test."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from charter.compiler.compile import CompileOptions, CompileResult, compile_project
from charter.compiler.frontends.project import load_project
from charter.runtime.plan import AgentPlan
from charter.runtime.plan.loader import PlanError, load_plan_bytes

POSIX = CompileOptions("posix", "/bin/bash")

BP_HEAD = '[agent]\nname = "a"\nentry_stage = "s"\n\n'

TOOL = """description: Look up a note.
input_schema:
  type: object
  properties:
    topic: {type: string}
  required: [topic]
capability: tool.call:{name}
approval_policy: prompt
"""

MODULE = "def execute(ctx, args):\n    return 'ok'\n"


def compiled(root: Path, options: CompileOptions = POSIX) -> CompileResult:
    project = load_project(root, use_default_config=False)
    result = compile_project(project, options)
    result.diagnostics = [*project.diagnostics, *result.diagnostics]
    return result


def first_agent(result: CompileResult) -> AgentPlan:
    """The first agent of the plan ``result`` must hold."""
    assert result.plan is not None, [str(d) for d in result.diagnostics if d.is_error]
    return result.plan.body.agents[0]


def codes(result: CompileResult) -> list[str]:
    return sorted(d.name for d in result.diagnostics)


def core(extra: str = "", grants: str = '    "tool.call:*": {}\n') -> str:
    return (
        "agent:\n  id: core\nslots:\n  tools: agent/tools\n  mcp: agent/mcp\n"
        "tools:\n  toolsets: [coding]\n" + extra + "capabilities:\n  defaults:\n"
        "    fs.read: {}\n    fs.write: {}\n    terminal.exec: {}\n    network.fetch: {}\n"
        "    session.read: {}\n" + grants
    )


def authored(name: str) -> dict[str, str]:
    return {
        f"agent/tools/{name}/tool.yaml": TOOL.replace("{name}", name),
        f"agent/tools/{name}/module.py": MODULE,
    }


def project_files(agent_yaml: str = "", tool: str | None = None) -> dict[str, str]:
    """An agent core (`core()` unless given) with its empty slots, and one authored tool."""
    files = {"agent.yaml": agent_yaml or core(), "agent/mcp/.keep": "", "agent/tools/.keep": ""}
    return {**files, **authored(tool)} if tool else files


def stage_decisions(result: CompileResult, stage: str) -> dict[str, Any]:
    assert result.plan is not None, [str(d) for d in result.diagnostics]
    [agent] = result.plan.body.agents
    s = agent.stage(stage)
    assert s is not None
    return {t.name: t.decision for t in s.tools}


# --- names -----------------------------------------------------------------------


def test_authored_tool_named_like_a_builtin_is_a_collision_naming_both(tree: Any) -> None:
    root = tree(project_files(tool="read_file"))
    result = compiled(root)
    assert result.plan is None
    [d] = [d for d in result.diagnostics if d.name == "tool-name-collision"]
    assert "built-in tool 'read_file'" in d.message and "authored tool 'read_file'" in d.message


def test_authored_tool_named_like_a_reached_builtin_alias_collides(tree: Any) -> None:
    bp = BP_HEAD + '[stages.s]\navailable_tools = ["shell", "bash"]\n'
    files = {**project_files(tool="bash"), "agent.leviath": bp}
    result = compiled(tree(files))
    found = [d.message for d in result.diagnostics if d.name == "tool-name-collision"]
    assert any("built-in tool 'shell'" in m and "authored tool 'bash'" in m for m in found)
    assert result.plan is None


def test_authored_web_search_is_fine_for_a_core_that_does_not_reach_the_builtin(tree: Any) -> None:
    root = tree(project_files(tool="web_search"))
    result = compiled(root)
    assert "tool-name-collision" not in codes(result)
    tool = first_agent(result).tool("web_search")
    assert tool is not None and tool.source == "authored"


def test_toolset_builtin_and_authored_tool_of_the_same_name_collide(tree: Any) -> None:
    root = tree(project_files(tool="terminal"))
    result = compiled(root)
    assert "tool-name-collision" in codes(result)


def test_authored_tool_colliding_with_a_declared_mcp_tool(tree: Any) -> None:
    files = {
        "agent.yaml": core(
            grants='    "tool.call:*": {}\n    "mcp.connect:docs": {}\n    "mcp.call:docs": {}\n'
        ),
        "agent/mcp/docs.yaml": "command: docs-server\ntools:\n  include: [search]\n",
        **authored("docs__search"),
    }
    result = compiled(tree(files))
    [d] = [d for d in result.diagnostics if d.name == "tool-name-collision"]
    assert "MCP server 'docs' tool 'search'" in d.message
    assert "authored tool 'docs__search'" in d.message


def test_alias_resolves_in_available_tools_permissions_and_required_tools(tree: Any) -> None:
    bp = BP_HEAD + (
        '[stages.s]\nmode = "interactive"\navailable_tools = ["bash", "ask_user_text"]\n'
        'required_tools = ["ask_user_text"]\n[stages.s.tool_permissions]\nbash = "deny"\n'
    )
    result = compiled(tree({"agent.leviath": bp}))
    stage = first_agent(result).stages[0]
    assert stage.attended == ("shell", "ask_user_text")
    assert stage.unattended == ("shell", "ask_user_text")
    assert stage_decisions(result, "s")["shell"].permission == "deny"


def test_unknown_tool_is_reported_at_its_position_with_a_suggestion(tree: Any) -> None:
    bp = BP_HEAD + '[stages.s]\navailable_tools = ["read_file", "edit_fiel"]\n'
    result = compiled(tree({"agent.leviath": bp}))
    [d] = [d for d in result.diagnostics if d.name == "unknown-tool"]
    assert (d.span.path, d.span.line, d.span.col) == ("agent.leviath", 6, 33)
    assert "did you mean 'edit_file'" in d.message
    assert result.plan is None


def test_blocking_tools_leave_the_unattended_set_unless_required(tree: Any) -> None:
    bp = BP_HEAD + (
        '[stages.s]\nmode = "interactive"\n'
        'available_tools = ["read_file", "ask_user_text", "ask_user_choice", "edit_document"]\n'
        'required_tools = ["ask_user_choice"]\n'
    )
    result = compiled(tree({"agent.leviath": bp}))
    stage = first_agent(result).stages[0]
    assert stage.unattended == ("read_file", "ask_user_choice")


def test_required_tool_must_be_available(tree: Any) -> None:
    bp = (
        BP_HEAD
        + '[stages.s]\navailable_tools = ["read_file"]\nrequired_tools = ["ask_user_text"]\n'
    )
    result = compiled(tree({"agent.leviath": bp}))
    assert "required-tool-not-available" in codes(result)


def test_orphan_stage_permission(tree: Any) -> None:
    bp = BP_HEAD + (
        '[stages.s]\navailable_tools = ["read_file"]\n'
        '[stages.s.tool_permissions]\nshell = "allow"\n'
    )
    result = compiled(tree({"agent.leviath": bp}))
    [d] = [d for d in result.diagnostics if d.name == "orphan-stage-permission"]
    assert d.span.line == 8


# --- permissions and clamps --------------------------------------------------------


def test_blueprint_cannot_loosen_past_the_default_and_says_so(tree: Any) -> None:
    bp = (
        BP_HEAD + '[tool_permissions]\nshell = "allow"\n\n[stages.s]\navailable_tools = ["shell"]\n'
    )
    result = compiled(tree({"agent.leviath": bp}))
    d = stage_decisions(result, "s")["shell"]
    assert d.permission == "ask" and d.liftable
    assert [c.rule for c in d.clamps] == ["blueprint-above-default"]
    [w] = [x for x in result.diagnostics if x.name == "blueprint-permission-clamped"]
    assert "asked for allow and became ask" in w.message
    assert (w.span.line, w.span.col) == (6, 9)


def test_user_config_is_the_ceiling_and_its_agent_overlay_trusts_more(tree: Any) -> None:
    bp = BP_HEAD + (
        '[tool_permissions]\nshell = "allow"\nwrite_file = "allow"\n\n'
        '[stages.s]\navailable_tools = ["shell", "write_file"]\n'
    )
    root = tree({"agent.leviath": bp})
    cfg = root.parent / "config.toml"
    cfg.write_text(
        '[tool_permissions]\nshell = "ask"\n\n[agent_tool_permissions.a]\nwrite_file = "allow"\n'
    )
    project = load_project(root, config=cfg)
    result = compile_project(project, POSIX)
    decisions = stage_decisions(result, "s")
    assert decisions["shell"].permission == "ask"
    assert decisions["shell"].clamps[0].rule == "blueprint-tighten-only"
    assert decisions["write_file"].permission == "allow"


def test_a_user_deny_covers_tools_sharing_the_implementation(tree: Any) -> None:
    root = tree(project_files())
    cfg = root.parent / "config.toml"
    cfg.write_text('[tool_permissions]\nshell = "deny"\n')
    result = compile_project(load_project(root, config=cfg), POSIX)
    d = stage_decisions(result, "main")["terminal"]
    assert d.permission == "deny"
    assert any("same implementation" in s.detail for s in d.scopes)


def test_web_fetch_may_be_preapproved_by_a_blueprint(tree: Any) -> None:
    bp = (
        BP_HEAD
        + '[stages.s]\navailable_tools = ["web_fetch"]\n'
        + '[stages.s.tool_permissions]\nweb_fetch = "allow"\n'
    )
    result = compiled(tree({"agent.leviath": bp}))
    assert stage_decisions(result, "s")["web_fetch"].permission == "allow"


def test_core_approval_joins_and_the_stricter_wins(tree: Any) -> None:
    extra = "approval:\n  tools:\n    read_file: deny\n"
    root = tree(project_files(core(extra), tool="note"))
    result = compiled(root)
    decisions = stage_decisions(result, "main")
    assert decisions["read_file"].permission == "deny"
    assert decisions["terminal"].permission == "ask"
    assert decisions["note"].permission == "ask"
    assert decisions["read_file"].clamps[-1].rule == "core-approval-stricter"


# --- metadata overrides ------------------------------------------------------------


@pytest.mark.parametrize(
    ("override", "fragment"),
    [
        ("terminal: {approval_policy: auto}", "laxer than the built-in"),
        ("terminal: {risk: low}", "lower than the built-in"),
        ("read_file: {capability: fs.write}", "cannot rename a built-in's capability"),
    ],
)
def test_metadata_overrides_cannot_loosen_a_builtin(
    tree: Any, override: str, fragment: str
) -> None:
    extra = "  metadata:\n    " + override + "\n"
    root = tree(project_files(core(extra)))
    result = compiled(root)
    [d] = [d for d in result.diagnostics if d.name == "metadata-override-loosens"]
    assert fragment in d.message
    assert result.plan is None


def test_metadata_override_may_tighten_and_disable(tree: Any) -> None:
    extra = (
        "  metadata:\n    terminal: {approval_policy: deny}\n    web_extract: {enabled: false}\n"
    )
    root = tree(project_files(core(extra)))
    result = compiled(root)
    decisions = stage_decisions(result, "main")
    assert decisions["terminal"].permission == "deny"
    assert "web_extract" not in decisions


# --- capabilities ------------------------------------------------------------------


def test_authored_gate_capability_must_be_granted(tree: Any) -> None:
    root = tree(project_files(core(grants=""), tool="note"))
    result = compiled(root)
    [d] = [d for d in result.diagnostics if d.name == "capability-not-granted" and d.is_error]
    assert "tool.call:note" in d.message and d.span.path == "agent/tools/note/tool.yaml"


def test_plural_capabilities_cannot_satisfy_the_gate(tree: Any) -> None:
    files = project_files(core(grants=""), tool="note")
    files["agent/tools/note/tool.yaml"] += "capabilities: [tool.call:note]\n"
    result = compiled(tree(files))
    [d] = [d for d in result.diagnostics if d.name == "capability-not-granted" and d.is_error]
    assert "cannot satisfy the gate" in d.message


def test_slot_scoped_grant_satisfies_only_its_own_tool(tree: Any) -> None:
    grants = (
        '  slots:\n    agent/tools/note:\n      "tool.call:note": {}\n      "tool.call:other": {}\n'
    )
    text = core(grants="") + grants
    files = {**project_files(text, tool="note"), **authored("other")}
    result = compiled(tree(files))
    bad = [d for d in result.diagnostics if d.name == "capability-not-granted" and d.is_error]
    assert [d.span.path for d in bad] == ["agent/tools/other/tool.yaml"]


def test_wildcard_secret_grant_is_refused(tree: Any) -> None:
    root = tree(project_files(core(grants='    "secret.bind:*": {}\n')))
    result = compiled(root)
    assert "wildcard-secret-grant" in codes(result) and result.plan is None


def test_authored_module_is_pinned_and_checked_without_import(tree: Any) -> None:
    files = project_files(tool="note")
    files["agent/tools/note/module.py"] = (
        "raise SystemExit('imported!')\ndef execute(ctx, args):\n    return 1\n"
    )
    result = compiled(tree(files))
    tool = first_agent(result).tool("note")
    assert tool is not None and tool.authored is not None
    assert len(tool.authored.module_sha256) == 64


def test_authored_entrypoint_with_wrong_signature(tree: Any) -> None:
    files = project_files(tool="note")
    files["agent/tools/note/module.py"] = "def execute(args):\n    return 1\n"
    result = compiled(tree(files))
    assert "authored-entrypoint-invalid" in codes(result)


# --- schemas and descriptions --------------------------------------------------------


def test_external_ref_turns_validation_off_with_a_warning(tree: Any) -> None:
    files = project_files(tool="note")
    files["agent/tools/note/tool.yaml"] = (
        "input_schema: {$ref: 'https://example.com/s.json'}\ncapability: tool.call:note\n"
    )
    result = compiled(tree(files))
    [d] = [d for d in result.diagnostics if d.name == "external-ref-in-schema"]
    assert not d.is_error
    tool = first_agent(result).tool("note")
    assert (
        tool is not None and tool.input_schema is None and "never fetched" in tool.validation_note
    )


def test_a_schema_that_does_not_compile_is_an_error_and_stays_closed(tree: Any) -> None:
    """CH701 is an error (no plan), and the agent's tool keeps the broken schema
    text, so a plan made anyway (the error suppressed) refuses every call to it
    instead of letting unchecked arguments through."""
    from charter.runtime.policy.arguments import SchemaCheck

    files = project_files(tool="note")
    files["agent/tools/note/tool.yaml"] = (
        "input_schema: {type: object, properties: {topic: {type: strng}}}\n"
        "capability: tool.call:note\n"
    )
    result = compiled(tree(files))
    [d] = [d for d in result.diagnostics if d.name == "schema-does-not-compile"]
    assert d.is_error and "every call to this tool is refused" in d.message
    assert result.plan is None
    [agent] = result.agents
    tool = agent.tool("note")
    assert tool is not None and tool.input_schema is not None and "strng" in tool.input_schema
    assert SchemaCheck(tool.input_schema).unusable


def test_a_fractional_schema_bound_compiles_into_the_schema_text(tree: Any) -> None:
    files = project_files(tool="note")
    files["agent/tools/note/tool.yaml"] = (
        "input_schema:\n  type: object\n  properties:\n    w: {type: number, minimum: 0.5}\n"
        "capability: tool.call:note\n"
    )
    result = compiled(tree(files))
    tool = first_agent(result).tool("note")
    assert (
        tool is not None and tool.input_schema is not None and '"minimum":0.5' in tool.input_schema
    )


def test_shell_description_names_the_target_shell_and_windows_gets_a_hint(tree: Any) -> None:
    bp = BP_HEAD + '[stages.s]\navailable_tools = ["shell"]\n'
    root = tree({"agent.leviath": bp})
    posix = compiled(root)
    win = compiled(root, CompileOptions("windows"))
    assert posix.plan is not None and win.plan is not None
    assert "/bin/bash" in (posix.plan.body.agents[0].tool("shell") or _no()).description
    assert "cmd.exe" in (win.plan.body.agents[0].tool("shell") or _no()).description
    assert posix.plan.body.agents[0].stages[0].shell_hint is None
    assert win.plan.body.agents[0].stages[0].shell_hint


def _no() -> Any:
    raise AssertionError("tool missing")


def test_output_stage_grants_submit_output_with_its_spec(tree: Any) -> None:
    bp = BP_HEAD + (
        '[stages.s]\nmode = "output"\navailable_tools = ["read_file"]\n'
        '[stages.s.output]\nformat = "markdown"\ninstructions = "Three bullet points."\n'
        'example = "- one"\n'
    )
    result = compiled(tree({"agent.leviath": bp}))
    agent = first_agent(result)
    assert "submit_output" in agent.stages[0].attended
    text = (agent.tool("submit_output") or _no()).description
    assert "markdown" in text and "Three bullet points." in text and "- one" in text


# --- stage graph -------------------------------------------------------------------


def test_entry_stage_and_edges_must_name_stages(tree: Any) -> None:
    bp = (
        '[agent]\nname = "a"\nentry_stage = "strat"\n\n[stages.start]\navailable_tools = []\n'
        '[[stages.start.edges]]\nto = "finsh"\n'
    )
    result = compiled(tree({"agent.leviath": bp}))
    names = codes(result)
    assert "entry-stage-unknown" in names and "edge-to-unknown-stage" in names


# --- the plan ----------------------------------------------------------------------


def test_plans_are_byte_identical_across_runs_and_directories(tree: Any, tmp_path: Path) -> None:
    src = Path(__file__).resolve().parents[2] / "blueprints" / "coder"
    a = tmp_path / "one" / "coder"
    b = tmp_path / "elsewhere" / "deeper" / "coder"
    shutil.copytree(src, a)
    shutil.copytree(src, b)
    first = compiled(a).plan
    again = compiled(a).plan
    other = compiled(b).plan
    assert first is not None and again is not None and other is not None
    assert first.to_json() == again.to_json() == other.to_json()
    assert str(tmp_path) not in first.to_json()


def test_a_plan_edited_by_hand_is_refused(tree: Any) -> None:
    bp = BP_HEAD + '[stages.s]\navailable_tools = ["shell"]\n'
    plan = compiled(tree({"agent.leviath": bp})).plan
    assert plan is not None
    data = json.loads(plan.to_json())
    data["body"]["agents"][0]["stages"][0]["tools"][0]["decision"]["permission"] = "allow"
    with pytest.raises(PlanError, match="digest mismatch"):
        load_plan_bytes(json.dumps(data).encode())
    assert load_plan_bytes(plan.to_json().encode()).digest == plan.digest


def test_a_plan_from_another_schema_version_is_refused(tree: Any) -> None:
    bp = BP_HEAD + '[stages.s]\navailable_tools = ["shell"]\n'
    plan = compiled(tree({"agent.leviath": bp})).plan
    assert plan is not None
    data = json.loads(plan.to_json())
    data["schema_version"] = 99
    with pytest.raises(PlanError, match="schema version 99"):
        load_plan_bytes(json.dumps(data).encode())


def test_the_plan_is_deeply_immutable(tree: Any) -> None:
    bp = BP_HEAD + '[stages.s]\navailable_tools = ["shell"]\n'
    plan = compiled(tree({"agent.leviath": bp})).plan
    assert plan is not None
    stage = plan.body.agents[0].stages[0]
    assert isinstance(stage.attended, tuple)
    with pytest.raises(ValidationError):
        stage.attended = ()  # type: ignore[misc]


def test_blueprint_safe_commands_apply_only_when_the_user_trusts_them(tmp_path: Path) -> None:
    src = Path(__file__).resolve().parents[2] / "blueprints" / "coder"
    root = tmp_path / "coder"
    shutil.copytree(src, root)
    cfg = root.parent / "config.toml"
    cfg.write_text("[safe_commands]\nshell = []\n")
    untrusted = compile_project(load_project(root, config=cfg), POSIX)
    assert untrusted.plan is not None
    assert untrusted.plan.body.agents[0].shell.safe == ()
    cfg.write_text('[agent_safe_commands.coder]\nallow_blueprint = true\nshell = ["make lint"]\n')
    trusted = compile_project(load_project(root, config=cfg), POSIX)
    assert trusted.plan is not None
    sources = {e.source for e in trusted.plan.body.agents[0].shell.safe}
    assert {"make lint", "git status", "git diff"} <= sources
    assert "blueprint-safe-commands-inert" not in {d.name for d in trusted.diagnostics}


def test_without_slots_tools_no_authored_tool_is_discovered(tmp_path: Path) -> None:
    root = tmp_path / "core"
    (root / "agent" / "tools" / "note").mkdir(parents=True)
    (root / "agent" / "tools" / "note" / "tool.yaml").write_text(TOOL.replace("{name}", "note"))
    (root / "agent" / "tools" / "note" / "module.py").write_text(MODULE)
    (root / "agent.yaml").write_text(
        "agent:\n  id: core\ntools:\n  toolsets: [coding]\n"
        "capabilities:\n  defaults:\n    fs.read: {}\n"
    )
    plan = compiled(root).plan
    assert plan is not None
    assert plan.body.agents[0].tool("note") is None
    assert all(t.source == "builtin" for t in plan.body.agents[0].tools)


def test_the_shell_tool_times_out_after_sixty_seconds_by_default(tree: Any) -> None:
    bp = BP_HEAD + '[stages.s]\navailable_tools = ["shell"]\n'
    plan = compiled(tree({"agent.leviath": bp})).plan
    assert plan is not None
    agent = plan.body.agents[0]
    assert agent.limits.shell_timeout_secs == 60
    assert "60 seconds" in (agent.tool("shell") or _no()).description


@pytest.mark.parametrize(
    ("env_shell", "present", "expected"),
    [
        ("/usr/local/bin/zsh", {"/usr/local/bin/zsh", "/bin/bash"}, "/usr/local/bin/zsh"),
        ("/usr/bin/fish", {"/usr/bin/fish", "/bin/bash"}, "/bin/bash"),
        ("/opt/missing/bash", {"/usr/bin/bash", "/bin/sh"}, "/usr/bin/bash"),
        ("", {"/bin/zsh", "/bin/sh"}, "/bin/zsh"),
        ("", {"/bin/sh"}, "/bin/sh"),
    ],
)
def test_the_posix_shell_is_resolved_like_seed_004(
    monkeypatch: pytest.MonkeyPatch, env_shell: str, present: set[str], expected: str
) -> None:
    from charter.compiler import compile as compile_module

    monkeypatch.setenv("SHELL", env_shell)
    monkeypatch.setattr(compile_module.Path, "exists", lambda self: str(self) in present)
    assert compile_module.default_shell("posix") == expected
    assert compile_module.default_shell("windows") == "cmd.exe /C"


@pytest.mark.parametrize(
    ("stage_hint", "config_hint", "hinted"),
    [(None, None, True), ("false", None, False), (None, "false", False), ("true", "false", True)],
)
def test_shell_hint_false_turns_the_windows_note_off(
    tmp_path: Path, stage_hint: str | None, config_hint: str | None, hinted: bool
) -> None:
    root = tmp_path / "a"
    root.mkdir()
    stage = '[stages.s]\navailable_tools = ["shell"]\n'
    if stage_hint is not None:
        stage += f"shell_hint = {stage_hint}\n"
    (root / "agent.leviath").write_text(BP_HEAD + stage)
    cfg = None
    if config_hint is not None:
        cfg = tmp_path / "config.toml"
        cfg.write_text(f"shell_hint = {config_hint}\n")
    project = load_project(root, config=cfg, use_default_config=False)
    result = compile_project(project, CompileOptions("windows"))
    assert result.plan is not None
    assert bool(result.plan.body.agents[0].stages[0].shell_hint) is hinted
