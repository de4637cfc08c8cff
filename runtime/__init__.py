"""Charter's runtime: load a sealed plan, decide tool calls through the gates, run them.

This module is the runtime's front door. The names in ``__all__`` are the API an
embedder, a client hook, the CLI's runtime verbs (``charter run``, ``serve``...)
and the benches rely on; everything else under ``charter.runtime`` may move
between releases. Each name is imported on first use (PEP 562), so ``import
charter.runtime`` costs nothing at start-up and importing any submodule does not
drag the whole runtime in.

A typical embedding::

    from charter.runtime import ToolCall, decide, load_for_agents, open_session

    prepared = load_for_agents("coder.plan.json", ["coder"])
    session = open_session(prepared, "coder", workspace=".")
    outcome = decide(session, ToolCall("read_file", {"path": "README.md"}))
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from charter.runtime.audit import AuditLog, read_events, verify_log
    from charter.runtime.errors import CharterError
    from charter.runtime.gates import Outcome, decide, execute
    from charter.runtime.hooks.claude_code import decide_claude_code_stdin
    from charter.runtime.hooks.common import HookOptions
    from charter.runtime.hooks.doctor import DoctorReport, HookExam, examine_hooks, plan_of
    from charter.runtime.hooks.gemini_cli import decide_gemini_cli_stdin
    from charter.runtime.hooks.watchdog import HOOK_TIME_LIMITS, answer_once
    from charter.runtime.mcp.relock import LockWriteError, announce_servers, relock_agent
    from charter.runtime.net.resolve import Resolver, SystemResolver
    from charter.runtime.net.urlpolicy import UrlPolicy, UrlVerdict
    from charter.runtime.plan import Plan
    from charter.runtime.plan.loader import PlanError, load_plan, load_plan_bytes
    from charter.runtime.plan.prepared import PreparedPlan, load_for_agents, prepare
    from charter.runtime.plan.vocabulary import EXIT_CODES, PERMISSIONS
    from charter.runtime.policy.session import Session, SessionError, open_session
    from charter.runtime.policy.workspace import decide_path
    from charter.runtime.results import ToolCall, ToolResult
    from charter.runtime.run.launch import LaunchRequest, LaunchResult, RunRefused, launch_run
    from charter.runtime.sandbox.oneshot import SandboxRefused, run_contained
    from charter.runtime.sandbox.profile import compare as compare_profiles
    from charter.runtime.sandbox.profile import summary as describe_profile
    from charter.runtime.schedule import fire_due_schedules
    from charter.runtime.serve.launch import ServeRefused, ServeRequest, run_server
    from charter.runtime.shell import ShellPolicy
    from charter.runtime.shell import Verdict as ShellVerdict
    from charter.runtime.shell import evaluate as judge_command
    from charter.runtime.terminal import wants_colour
    from charter.runtime.version import VERSION

# name -> the module that defines it. Kept as data so the test that pins the
# API can check every entry resolves, and so adding a name is one line.
_EXPORTS: dict[str, str] = {
    "AuditLog": "charter.runtime.audit",
    "CharterError": "charter.runtime.errors",
    "DoctorReport": "charter.runtime.hooks.doctor",
    "EXIT_CODES": "charter.runtime.plan.vocabulary",
    "HOOK_TIME_LIMITS": "charter.runtime.hooks.watchdog",
    "HookExam": "charter.runtime.hooks.doctor",
    "HookOptions": "charter.runtime.hooks.common",
    "LaunchRequest": "charter.runtime.run.launch",
    "LaunchResult": "charter.runtime.run.launch",
    "LockWriteError": "charter.runtime.mcp.relock",
    "Outcome": "charter.runtime.gates",
    "PERMISSIONS": "charter.runtime.plan.vocabulary",
    "Plan": "charter.runtime.plan",
    "PlanError": "charter.runtime.plan.loader",
    "PreparedPlan": "charter.runtime.plan.prepared",
    "Resolver": "charter.runtime.net.resolve",
    "RunRefused": "charter.runtime.run.launch",
    "SandboxRefused": "charter.runtime.sandbox.oneshot",
    "ServeRefused": "charter.runtime.serve.launch",
    "ServeRequest": "charter.runtime.serve.launch",
    "Session": "charter.runtime.policy.session",
    "SessionError": "charter.runtime.policy.session",
    "ShellPolicy": "charter.runtime.shell",
    "ShellVerdict": "charter.runtime.shell:Verdict",
    "SystemResolver": "charter.runtime.net.resolve",
    "ToolCall": "charter.runtime.results",
    "ToolResult": "charter.runtime.results",
    "UrlPolicy": "charter.runtime.net.urlpolicy",
    "UrlVerdict": "charter.runtime.net.urlpolicy",
    "VERSION": "charter.runtime.version",
    "announce_servers": "charter.runtime.mcp.relock",
    "answer_once": "charter.runtime.hooks.watchdog",
    "compare_profiles": "charter.runtime.sandbox.profile:compare",
    "decide": "charter.runtime.gates",
    "decide_claude_code_stdin": "charter.runtime.hooks.claude_code",
    "decide_gemini_cli_stdin": "charter.runtime.hooks.gemini_cli",
    "decide_path": "charter.runtime.policy.workspace",
    "describe_profile": "charter.runtime.sandbox.profile:summary",
    "examine_hooks": "charter.runtime.hooks.doctor",
    "execute": "charter.runtime.gates",
    "fire_due_schedules": "charter.runtime.schedule",
    "judge_command": "charter.runtime.shell:evaluate",
    "launch_run": "charter.runtime.run.launch",
    "load_for_agents": "charter.runtime.plan.prepared",
    "load_plan": "charter.runtime.plan.loader",
    "load_plan_bytes": "charter.runtime.plan.loader",
    "open_session": "charter.runtime.policy.session",
    "plan_of": "charter.runtime.hooks.doctor",
    "prepare": "charter.runtime.plan.prepared",
    "read_events": "charter.runtime.audit",
    "relock_agent": "charter.runtime.mcp.relock",
    "run_contained": "charter.runtime.sandbox.oneshot",
    "run_server": "charter.runtime.serve.launch",
    "verify_log": "charter.runtime.audit",
    "wants_colour": "charter.runtime.terminal",
}

__all__ = [
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


def __getattr__(name: str) -> Any:
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'charter.runtime' has no attribute {name!r}")
    module, _, attr = target.partition(":")  # "module:attr" exports attr as name
    value = getattr(import_module(module), attr or name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
