"""Compiling blueprints the way Leviath runs them: stages in declaration
order, fan-out stages, script tools and their permissions, and MCP servers
declared in a blueprint or in the user's config."""

from __future__ import annotations

import json
from pathlib import Path

from _support.files import write_tree

from charter.compiler.compile import CompileOptions, CompileResult, compile_project
from charter.compiler.frontends.config_toml import McpServer
from charter.compiler.frontends.project import load_project
from charter.compiler.resolve.leviath_mcp import entry_digest
from charter.runtime.mcp.lock import LOCK_FILE, ListedTool, Lock, ServerLock, pin_tools, write_lock
from charter.runtime.plan import AgentPlan

POSIX = CompileOptions("posix", "/bin/bash")
HEAD = '[agent]\nname = "a"\n\n'
SEARCH = (
    "// @tool web_search\n// @description Search the web my way.\n"
    '// @param query string required "What to look for"\n'
    '// @param freshness string optional "How recent"\nparams.query\n'
)


def compile_dir(root: Path, files: dict[str, str], config: str | None = None) -> CompileResult:
    write_tree(root, files)
    cfg = None
    if config is not None:
        cfg = root.parent / "config" / "config.toml"
        cfg.parent.mkdir(parents=True, exist_ok=True)
        cfg.write_text(config, encoding="utf-8")
    project = load_project(root, config=cfg, use_default_config=False)
    result = compile_project(project, POSIX)
    result.diagnostics = [*project.diagnostics, *result.diagnostics]
    return result


def agent_of(result: CompileResult) -> AgentPlan:
    assert result.plan is not None, [str(d) for d in result.diagnostics if d.is_error]
    [agent] = result.plan.body.agents
    return agent


def names(result: CompileResult) -> list[str]:
    return sorted(d.name for d in result.diagnostics)


def decision(agent: AgentPlan, stage: str, tool: str) -> str:
    s = agent.stage(stage)
    assert s is not None
    return next(t.decision.permission for t in s.tools if t.name == tool)


# -- stages in declaration order ----------------------------------------------------------


def test_stages_without_transitions_run_in_declaration_order(tmp_path: Path) -> None:
    bp = HEAD + "[stages.one]\n[stages.two]\n[stages.three]\n"
    agent = agent_of(compile_dir(tmp_path, {"agent.leviath": bp}))
    edges = {s.name: [(e.to, e.condition, e.implied) for e in s.edges] for s in agent.stages}
    assert edges == {
        "one": [("two", "always", True)],
        "two": [("three", "always", True)],
        "three": [],
    }


def test_a_written_transitions_table_replaces_the_order(tmp_path: Path) -> None:
    bp = (
        HEAD + "[stages.one]\n[stages.one.transitions.three]\nhint = 'skip'\n"
        "[stages.two]\n[stages.two.transitions]\n[stages.three]\n"
    )
    agent = agent_of(compile_dir(tmp_path, {"agent.leviath": bp}))
    one, two, three = agent.stages
    assert [(e.to, e.implied) for e in one.edges] == [("three", False)]
    assert two.edges == ()  # an empty table ends the run
    assert three.edges == ()


def test_stages_that_may_end_the_run_get_no_implied_edge(tmp_path: Path) -> None:
    bp = HEAD + '[stages.one]\nmode = "output"\n[stages.two]\nallow_complete = true\n[stages.x]\n'
    agent = agent_of(compile_dir(tmp_path, {"agent.leviath": bp}))
    assert [s.edges for s in agent.stages[:2]] == [(), ()]


def test_a_string_edge_is_an_always_edge(tmp_path: Path) -> None:
    bp = (
        HEAD
        + '[stages.a]\n[stages.a.transitions]\nb = "true"\n[stages.b]\n[stages.b.transitions]\n'
    )
    result = compile_dir(tmp_path, {"agent.leviath": bp})
    [edge] = agent_of(result).stages[0].edges
    assert (edge.to, edge.condition, edge.implied) == ("b", "always", False)
    assert "edge-written-as-value" not in names(result)


# -- fan-out ------------------------------------------------------------------------------


def test_a_fan_out_stage_plans_its_workers_and_hands_over_to_its_merge_stage(
    tmp_path: Path,
) -> None:
    bp = (
        HEAD + '[stages.split]\nmode = "fan_out"\nworker_stage = "work"\nmerge_stage = "merge"\n'
        "max_workers = 0\nmax_attempts = 1\n"
        "[stages.work]\nallow_as_worker = true\nrequire_output = true\n"
        'available_tools = ["submit_output"]\n'
        '[stages.work.transitions]\n[stages.merge]\nmode = "output"\n'
    )
    agent = agent_of(compile_dir(tmp_path, {"agent.leviath": bp}))
    split = agent.stage("split")
    assert split is not None and split.fan_out is not None
    assert split.fan_out.model_dump(exclude_none=True) == {
        "worker_stage": "work",
        "merge_stage": "merge",
        "max_workers": 0,
        "max_attempts": 1,
        "on_worker_failure": "continue",
    }
    assert "fan_out" in split.attended and decision(agent, "split", "fan_out") == "allow"
    assert [(e.to, e.implied) for e in split.edges] == [("merge", True)]


def test_fan_out_wiring_leviath_refuses_is_an_error(tmp_path: Path) -> None:
    bp = (
        HEAD + '[stages.split]\nmode = "fan_out"\nworker_stage = "work"\nworker_agent = "other"\n'
        'merge_stage = "mrege"\n[stages.work]\n[stages.merge]\n'
    )
    result = compile_dir(tmp_path, {"agent.leviath": bp})
    assert result.plan is None
    messages = [d.message for d in result.diagnostics if d.name == "fan-out-invalid"]
    assert len(messages) == 3
    assert any("exactly one of" in m for m in messages)
    assert any("allow_as_worker" in m for m in messages)
    assert any("did you mean 'merge'" in m for m in messages)


# -- script tools -------------------------------------------------------------------------


def test_a_script_tool_is_the_agents_own_tool_even_under_a_builtins_name(tmp_path: Path) -> None:
    bp = (
        HEAD
        + '[tool_permissions]\nweb_search = "allow"\n\n'
        + '[stages.s]\navailable_tools = ["web_search"]\n'
    )
    result = compile_dir(tmp_path, {"agent.leviath": bp, "tools/web_search.rhai": SEARCH})
    agent = agent_of(result)
    tool = agent.tool("web_search")
    assert tool is not None and tool.source == "script" and tool.outbound
    assert tool.description == "Search the web my way."
    assert json.loads(tool.input_schema or "") == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for"},
            "freshness": {"type": "string", "description": "How recent"},
        },
        "required": ["query"],
    }
    assert tool.script is not None and tool.script.path == "tools/web_search.rhai"
    assert len(tool.script.sha256) == 64
    # Scripts here can neither run commands nor write, so the web pair's
    # exception to the blueprint clamp holds, as in Leviath.
    assert decision(agent, "s", "web_search") == "allow"
    assert "script-tool-replaces-builtin" in names(result)


def test_a_script_that_can_run_commands_loses_the_web_exception(tmp_path: Path) -> None:
    bp = (
        HEAD
        + '[tool_permissions]\nweb_search = "allow"\n\n'
        + '[stages.s]\navailable_tools = ["web_search"]\n'
    )
    config = '[tool_script_permissions]\nshell = "allow"\n'
    result = compile_dir(tmp_path, {"agent.leviath": bp, "tools/web_search.rhai": SEARCH}, config)
    agent = agent_of(result)
    assert agent.script_permissions is not None
    assert agent.script_permissions.shell.effective == "allow"
    assert decision(agent, "s", "web_search") == "ask"
    assert "blueprint-permission-clamped" in names(result)


def test_script_permissions_are_tighten_only(tmp_path: Path) -> None:
    bp = (
        HEAD
        + '[tool_script_permissions]\nshell = "allow"\nhttp_post = "deny"\n'
        + 'read_file = "inherit"\n\n'
        '[stages.s]\navailable_tools = ["lookup"]\n'
    )
    script = '// @tool lookup\n// @param word string required "w"\nparams.word\n'
    config = '[tool_script_permissions]\nshell = "deny"\nread_file = "allow"\n'
    result = compile_dir(tmp_path, {"agent.leviath": bp, "tools/lookup.rhai": script}, config)
    perms = agent_of(result).script_permissions
    assert perms is not None
    assert (perms.shell.value, perms.shell.detail) == ("deny", "config")
    assert (perms.http_post.value, perms.http_post.detail) == ("deny", "blueprint")
    assert (perms.read_file.value, perms.read_file.detail) == ("inherit", "blueprint")
    # inherit defers to the entry stage's read_file decision: allow by default.
    assert perms.read_file.effective == "allow"
    assert perms.write_file.effective == "deny"  # write_file asks, so a script may not
    [clamp] = [d for d in result.diagnostics if d.name == "script-permission-clamped"]
    assert "shell" in clamp.message and clamp.span.line == 5


def test_an_agents_own_script_shadows_the_users_tools_folder(tmp_path: Path) -> None:
    user_tools = tmp_path / "config" / "tools"
    user_tools.mkdir(parents=True)
    (user_tools / "lookup.rhai").write_text("// @tool lookup\n// @description mine\n")
    (user_tools / "shared.rhai").write_text("// @tool shared\n// @description theirs\n")
    bp = HEAD + '[stages.s]\navailable_tools = ["lookup", "shared"]\n'
    own = "// @tool lookup\n// @description the agent's\n"
    files = {"agent.leviath": bp, "tools/lookup.rhai": own}
    result = compile_dir(tmp_path / "p", files, "shell_hint = true\n")
    agent = agent_of(result)
    lookup, shared = agent.tool("lookup"), agent.tool("shared")
    assert lookup is not None and lookup.description == "the agent's"
    assert lookup.script is not None and lookup.script.scope == "agent"
    assert shared is not None and shared.script is not None
    assert (shared.script.scope, shared.script.path) == ("user", "<user-tools>/shared.rhai")


def test_a_toml_override_replaces_the_directives(tmp_path: Path) -> None:
    override = (
        '[tool]\nname = "lookup"\ndescription = "From the toml."\n\n[[tool.params]]\nname = "n"\n'
        'required = true\nschema = { type = "integer", minimum = 1 }\n'
    )
    files = {
        "agent.leviath": HEAD + '[stages.s]\navailable_tools = ["lookup"]\n',
        "tools/lookup.rhai": "// @tool ignored\nparams.n\n",
        "tools/lookup.toml": override,
    }
    tool = agent_of(compile_dir(tmp_path, files)).tool("lookup")
    assert tool is not None and tool.description == "From the toml."
    assert json.loads(tool.input_schema or "")["properties"] == {
        "n": {"type": "integer", "minimum": 1}
    }
    assert tool.script is not None and tool.script.override == "tools/lookup.toml"


def test_a_script_with_a_typo_in_a_param_type_is_an_error_and_never_unchecked(
    tmp_path: Path,
) -> None:
    # Leviath turns validation off for such a script; Charter fails closed
    # (CH701 is an error), so no plan lets its calls through unchecked.
    files = {
        "agent.leviath": HEAD + '[stages.s]\navailable_tools = ["lookup"]\n',
        "tools/lookup.rhai": '// @tool lookup\n// @param n integr required "n"\n',
    }
    result = compile_dir(tmp_path, files)
    [d] = [d for d in result.diagnostics if d.name == "schema-does-not-compile"]
    assert d.is_error and d.span.path == "tools/lookup.rhai"
    assert "every call to this tool is refused" in d.message
    assert result.plan is None


def test_a_script_that_does_not_declare_itself_is_no_tool(tmp_path: Path) -> None:
    files = {
        "agent.leviath": HEAD + '[stages.s]\navailable_tools = ["lookup"]\n',
        "tools/lookup.rhai": '// @tool lookup\n// @param n integer "no requiredness"\n',
    }
    result = compile_dir(tmp_path, files)
    assert result.plan is None
    [undeclared] = [d for d in result.diagnostics if d.name == "script-tool-undeclared"]
    assert (undeclared.span.path, undeclared.span.line) == ("tools/lookup.rhai", 2)
    assert "unknown-tool" in names(result)


# -- MCP servers the Leviath way ----------------------------------------------------------

TRUST = "[agent_mcp_servers.a]\nallow_blueprint = true\n"
SERVER = '[[mcp_servers]]\nname = "docs"\ncommand = "docs-mcp"\nargs = ["--stdio"]\n\n'


def test_a_blueprints_own_server_is_refused_until_the_user_trusts_it(tmp_path: Path) -> None:
    bp = HEAD + SERVER + '[stages.s]\navailable_tools = ["docs__search"]\n'
    result = compile_dir(tmp_path, {"agent.leviath": bp})
    agent = agent_of(result)
    [server] = agent.mcp_servers
    assert (server.declared_in, server.transport, server.command) == (
        "blueprint",
        "stdio",
        "docs-mcp",
    )
    assert server.connect_decision.permission == "deny"
    assert decision(agent, "s", "docs__search") == "deny"
    assert "blueprint-mcp-server-inert" in names(result)

    trusted = compile_dir(tmp_path, {}, TRUST)
    agent = agent_of(trusted)
    assert agent.mcp_servers[0].connect_decision.permission == "ask"
    assert decision(agent, "s", "docs__search") == "ask"
    assert "blueprint-mcp-server-inert" not in names(trusted)


def test_a_config_server_joins_the_agents_that_name_it(tmp_path: Path) -> None:
    bp = HEAD + '[stages.s]\navailable_connectors = ["github"]\n'
    config = (
        '[[mcp_servers]]\nname = "github"\ntransport = "http"\nurl = "https://mcp.example/"\n'
        'headers = { Authorization = "Bearer ${GITHUB_TOKEN}" }\n'
        '[[mcp_servers]]\nname = "unused"\ncommand = "x"\n'
    )
    agent = agent_of(compile_dir(tmp_path, {"agent.leviath": bp}, config))
    [server] = agent.mcp_servers
    assert (server.server, server.declared_in, server.transport) == (
        "github",
        "config",
        "streamable_http",
    )
    assert server.connect_decision.permission == "ask"
    stage = agent.stage("s")
    assert stage is not None and stage.attended == ("github__*",)


def test_a_literal_credential_in_a_blueprint_server_is_an_error(tmp_path: Path) -> None:
    bp = (
        HEAD + '[[mcp_servers]]\nname = "gh"\ncommand = "gh-mcp"\n'
        'env = { GITHUB_TOKEN = "ghp_0123456789abcdefghijklmnopqrstuvwxyz" }\n\n[stages.s]\n'
    )
    result = compile_dir(tmp_path, {"agent.leviath": bp})
    [d] = [d for d in result.diagnostics if d.name == "hardcoded-secret"]
    assert d.span.line == 7 and "ghp_" not in d.message
    assert result.plan is None


def test_a_locked_blueprint_server_offers_its_pinned_tools_through_a_connector(
    tmp_path: Path,
) -> None:
    bp = HEAD + SERVER + '[stages.s]\navailable_connectors = ["docs"]\n'
    model = McpServer.model_validate({"name": "docs", "command": "docs-mcp", "args": ("--stdio",)})
    listed = [ListedTool(n, f"{n} it", {"type": "object"}) for n in ("search", "get_page")]
    launch = {"command": "docs-mcp", "args": ["--stdio"]}
    entry = ServerLock("docs", "stdio", launch, entry_digest(model), pin_tools("docs", listed))
    write_lock(tmp_path / LOCK_FILE, Lock({"docs": entry}))
    result = compile_dir(
        tmp_path, {"agent.leviath": bp}, "[agent_mcp_servers.a]\nallow_blueprint = true\n"
    )
    agent = agent_of(result)
    stage = agent.stage("s")
    assert stage is not None and stage.attended == ("docs__get_page", "docs__search")
    tool = agent.tool("docs__search")
    assert tool is not None and tool.description == "search it" and tool.mcp is not None
    assert agent.mcp_servers[0].locked
    # Editing the entry makes the pins stale: the server is discovered again.
    (tmp_path / "agent.leviath").write_text(bp.replace('"--stdio"', '"--http"'))
    stale = agent_of(compile_dir(tmp_path, {}, TRUST))
    assert stale.stage("s") is not None and stale.stage("s").attended == ("docs__*",)  # type: ignore[union-attr]


def test_an_mcp_name_of_no_declared_server_is_a_warning_not_an_error(tmp_path: Path) -> None:
    bp = HEAD + '[stages.s]\navailable_tools = ["github__create_issue"]\n'
    result = compile_dir(tmp_path, {"agent.leviath": bp})
    assert result.plan is not None
    assert names(result).count("mcp-server-not-declared") == 1
    assert "unknown-tool" not in names(result)


# -- safe commands --------------------------------------------------------------------------


def test_an_inert_safe_command_entry_that_cannot_parse_is_still_an_error(tmp_path: Path) -> None:
    bp = HEAD + '[safe_commands]\nshell = ["git status; curl x"]\n\n[stages.s]\n'
    result = compile_dir(tmp_path, {"agent.leviath": bp})
    assert "unparseable-safe-command" in names(result)
    assert "blueprint-safe-commands-inert" in names(result)
    assert result.plan is None
