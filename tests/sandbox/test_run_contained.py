"""Everything ``charter run`` executes runs contained: shell commands in the
foreground and as background tasks, authored tools, MCP stdio servers; and
the asks a complete sandbox answers need no prompt there."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
import tomli_w
from _support.sandbox import facts, need_full_sandbox, sandboxed_workspace

from charter.compiler.cli import main
from charter.compiler.compile import CompileOptions, compile_project
from charter.compiler.frontends.project import load_project
from charter.runtime.mcp.launch import Launch
from charter.runtime.redact import Redactor
from charter.runtime.sandbox.containment import prepare
from charter.runtime.tools.authored import run_authored
from charter.runtime.tools.registry import ToolRuntime

DATA = Path(__file__).resolve().parents[1] / "fixtures" / "sandbox"
BLUEPRINT = """\
[agent]
name = "probe"
entry_stage = "work"

[tool_permissions]
shell = "ask"

[stages.work]
mode = "autonomous"
available_tools = ["shell", "terminal", "task_status", "task_list"]
max_iterations = 8

[stages.work.tool_permissions]
shell = "ask"
terminal = "ask"

[stages.work.transitions.report]
hint = "done"

[stages.report]
mode = "output"
available_tools = []
max_iterations = 2

[stages.report.transitions]
"""


def _run(
    tmp_path: Path, calls: list[dict[str, Any]], *extra: str, config: dict[str, Any] | None = None
) -> tuple[int, list[dict[str, Any]], str]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / "agent.leviath").write_text(BLUEPRINT)
    turns = [{"stage": "work", "tool_calls": [c]} for c in calls]
    turns.append({"stage": "work", "text": "done", "edge": "report"})
    turns.append(
        {
            "stage": "report",
            "tool_calls": [{"name": "submit_output", "arguments": {"content": "{}"}}],
        }
    )
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": turns}))
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    argv = [
        "run",
        str(project),
        "--agent",
        "probe",
        "--model",
        f"script:{script}",
        "--workdir",
        str(ws),
        "--json",
        *extra,
    ]
    if config is not None:
        cfg = tmp_path / "config.toml"
        cfg.write_text(tomli_w.dumps(config))
        argv += ["--config", str(cfg)]
    else:
        argv.append("--no-user-config")
    old_stdin = sys.stdin
    sys.stdin = io.StringIO("")
    out = io.StringIO()
    old_stdout = sys.stdout
    sys.stdout = out
    try:
        code = main(argv)
    finally:
        sys.stdin, sys.stdout = old_stdin, old_stdout
    events = [json.loads(x) for x in out.getvalue().splitlines() if x.startswith("{")]
    return code, events, out.getvalue()


def _results(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["kind"] == "tool_finished"]


def test_a_yolo_run_contains_its_commands(tmp_path: Path) -> None:
    need_full_sandbox()
    secret_dir = tmp_path / "private-data"
    secret_dir.mkdir()
    (secret_dir / "key").write_text("SECRET-RUN-3141\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    calls = [
        {
            "name": "shell",
            "arguments": {
                "command": f"{sys.executable} -c \"open('{outside}/pwned', 'w')\"; echo rc=$?"
            },
        },
        {
            "name": "shell",
            "arguments": {"command": f"cat {secret_dir}/key; ls /proc | grep -c '^[0-9]'"},
        },
        {
            "name": "terminal",
            "arguments": {"command": "setsid sleep 871 & echo bg", "background": True},
        },
        {"name": "shell", "arguments": {"command": "echo made > inside.txt && cat inside.txt"}},
    ]
    code, events, _ = _run(
        tmp_path, calls, "--yolo", config={"sandbox": {"hide": [str(secret_dir)]}}
    )
    assert code == 0, events[-3:]
    shown = " ".join(e.get("result", "") for e in _results(events))
    assert not (outside / "pwned").exists()
    assert "SECRET-RUN-3141" not in shown
    assert (tmp_path / "ws" / "inside.txt").read_text() == "made\n"
    assert any(
        "commands run contained" in e.get("message", "") for e in events if e["kind"] == "notice"
    )
    time.sleep(0.3)
    leftovers = subprocess.run(["pgrep", "-f", "sleep 871"], capture_output=True, text=True).stdout
    assert leftovers.strip() == "", "a background task's child outlived the run"


def test_an_attended_run_does_not_ask_about_what_the_sandbox_answers(tmp_path: Path) -> None:
    need_full_sandbox()
    calls = [
        {
            "name": "shell",
            "arguments": {"command": "curl -sS -m 2 http://127.0.0.1:9/ || echo unreachable"},
        },
        {"name": "shell", "arguments": {"command": "rm -f nothing.txt"}},
    ]
    code, events, _ = _run(tmp_path, calls)
    results = _results(events)
    network, delete = results[0], results[1]
    assert network["decision"] == "allow" and network["rule"] == "sandbox-contained"
    assert "unreachable" in network["result"]
    # Deleting a workspace file is not the sandbox's to answer: it asks, and
    # with nobody to answer (stdin closed) it is refused.
    assert delete["decision"].startswith("ask")


def test_the_run_refuses_to_start_unattended_where_nothing_can_be_contained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from charter.runtime.sandbox import probe

    monkeypatch.setenv("CHARTER_SANDBOX_FAKE_HOST", "none")
    probe.reset()
    try:
        err = io.StringIO()
        monkeypatch.setattr(sys, "stderr", err)
        code, events, _ = _run(
            tmp_path, [{"name": "shell", "arguments": {"command": "true"}}], "--yolo"
        )
        assert code == 2 and not events
        assert "does not start uncontained" in err.getvalue()
        # The user's own fallback lets it run, and it says what is missing.
        code, events, _ = _run(
            tmp_path,
            [{"name": "shell", "arguments": {"command": "echo ran"}}],
            "--yolo",
            config={"sandbox": {"on_unavailable": "warn"}},
        )
        assert code == 0
        notes = [e["message"] for e in events if e["kind"] == "notice"]
        assert any("NOT contained" in n for n in notes)
    finally:
        monkeypatch.delenv("CHARTER_SANDBOX_FAKE_HOST")
        probe.reset()


def test_a_cancelled_contained_command_stops_without_waiting_out_the_grace(
    tmp_path: Path,
) -> None:
    # A contained `sleep` is pid 1 of its pid namespace, where the kernel
    # drops a SIGTERM it has no handler for: the KILL follows at once, so a
    # Ctrl-C of the run finds the shell call cancelled, not abandoned.
    need_full_sandbox()
    import threading

    from charter.runtime.proc import GRACE_S, run_command
    from charter.runtime.proc.tree import deaf_namespace_init

    ws, sb, env = sandboxed_workspace(tmp_path)
    cancel = threading.Event()

    def on_output(_stream: str, _chunk: bytes) -> None:
        cancel.set()  # the command has started and said so

    try:
        result = run_command(
            ["/bin/sh", "-c", "echo up; exec sleep 37"],
            cwd=ws,
            env=env,
            timeout_s=60,
            cancel=cancel,
            on_output=on_output,
            sandbox=sb,
        )
    finally:
        sb.close()
    assert result.cancelled and result.stop_error is None
    assert result.duration_s < GRACE_S
    # The same sleep outside a sandbox is no namespace's init.
    plain = subprocess.Popen(["sleep", "30"])
    try:
        assert not deaf_namespace_init(plain.pid, 15)
    finally:
        plain.kill()
        plain.wait()


# -- authored tools ------------------------------------------------------------------

AGENT_YAML = """\
schema_version: 1
agent:
  id: t-core
  summary: A core with one probing tool.
slots:
  tools: agent/tools
approval:
  default: auto
"""
TOOL_YAML = """\
description: Try to reach outside.
input_schema:
  type: object
  properties:
    outside: {type: string}
approval_policy: auto
"""
MODULE = """\
import os

def execute(ctx, args):
    ctx.output.send("probing")
    wrote = "yes"
    try:
        open(os.path.join(args["outside"], "authored.txt"), "w").write("x")
    except OSError as exc:
        wrote = exc.strerror
    pids = sum(1 for n in os.listdir("/proc") if n.isdigit())
    return {"content": f"wrote={wrote} pid={os.getpid()} pids={pids}", "data": {"pid": os.getpid()}}
"""


def test_an_authored_tool_runs_in_a_contained_child(tmp_path: Path) -> None:
    need_full_sandbox()
    root = tmp_path / "core"
    tool = root / "agent" / "tools" / "probe"
    tool.mkdir(parents=True)
    (root / "agent.yaml").write_text(AGENT_YAML)
    (tool / "tool.yaml").write_text(TOOL_YAML)
    (tool / "module.py").write_text(MODULE)
    loaded = load_project(root, use_default_config=False)
    result = compile_project(loaded, CompileOptions(render_descriptions=False))
    assert result.plan is not None, [str(d) for d in result.diagnostics]
    agent = result.plan.body.agents[0]
    entry = agent.tool("probe")
    assert entry is not None
    outside = tmp_path / "outside"
    outside.mkdir()
    ws, sb, env = sandboxed_workspace(tmp_path)
    try:
        rt = ToolRuntime(
            workspace=ws, project_root=root, redactor=Redactor(), timeout_s=30, env=env, sandbox=sb
        )
        contained = run_authored(entry, {"outside": str(outside)}, rt)
        plain = run_authored(
            entry, {"outside": str(outside)}, ToolRuntime(workspace=ws, project_root=root)
        )
    finally:
        sb.close()
    assert contained.ok and contained.data.get("contained") is True, contained.content
    assert "wrote=yes" not in contained.content and "pids=" in contained.content
    assert contained.data["pid"] != os.getpid()
    assert "[progress]\nprobing" in (contained.display or "")
    # In process (no sandbox in force) the same module reaches outside: the
    # containment above is the sandbox's doing, not the module's.
    assert "wrote=yes" in plain.content and plain.data["pid"] == os.getpid()
    (outside / "authored.txt").unlink()


# -- MCP stdio servers ---------------------------------------------------------------


def test_an_mcp_stdio_server_starts_inside_the_agents_sandbox(tmp_path: Path) -> None:
    need_full_sandbox()
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    src = tmp_path / "bp"
    src.mkdir()
    (src / "agent.leviath").write_text(BLUEPRINT)
    loaded = load_project(src, use_default_config=False)
    plan = compile_project(loaded, CompileOptions(render_descriptions=False)).plan
    assert plan is not None
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    c = prepare(
        plan.body.agents,
        workspace=ws,
        private_root=tmp_path / "private",
        env_home=None,
        unattended=True,
        host=facts(),
    )
    try:
        wrap = c.mcp_contain(plan.body.agents[0])
        assert wrap is not None
        launch = Launch(
            "probe",
            "stdio",
            sys.executable,
            (str(DATA / "probe_server.py"),),
            {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "mcp-home")},
            ws,
            None,
            {},
            Redactor(),
        )
        (tmp_path / "mcp-home").mkdir()
        contained = wrap(launch)

        async def talk() -> tuple[str, str, str]:
            params = StdioServerParameters(
                command=contained.command or "",
                args=list(contained.args),
                env=dict(contained.env),
                cwd=str(ws),
            )
            async with Client(stdio_client(params)) as client:

                async def call(name: str, **args: Any) -> str:
                    r = await client.call_tool(name, args)
                    return "".join(getattr(p, "text", "") for p in r.content)

                return (
                    await call("processes"),
                    await call("write", path=str(outside / "mcp.txt")),
                    await call("write", path=str(ws / "mcp.txt")),
                )

        processes, outside_write, inside_write = anyio.run(talk)
    finally:
        c.close()
    assert int(processes) <= 3, processes  # its own pid namespace
    assert outside_write.startswith("error") and not (outside / "mcp.txt").exists()
    assert inside_write == "ok" and (ws / "mcp.txt").exists()
    assert contained.command == sys.executable and "charter.runtime.sandbox.exec" in " ".join(
        contained.args
    )
