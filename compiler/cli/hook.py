"""``charter hook claude-code``: answer Claude Code's PreToolUse hook from a plan.

Reads the hook event on stdin, writes the decision JSON on stdout and exits
0, including when the input or the plan is unusable (the answer is then
``ask`` with the reason: fail closed, never allow). Imports only
``charter.runtime``.
"""

from __future__ import annotations

import argparse
import json
import sys

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("agent_kind", choices=("claude-code",), help="which agent's hook to answer")
    p.add_argument("--plan", required=True, help="compiled plan (plan.json)")
    p.add_argument("--agent", help="agent in the plan (needed when it holds several)")
    p.add_argument("--stage", help="stage (default: the agent's entry stage)")
    p.add_argument("--workspace", help="workspace directory (default: the event's cwd)")


def run(args: argparse.Namespace) -> int:
    from charter.runtime.hooks.claude_code import MAX_EVENT_BYTES, decide_event

    raw = sys.stdin.buffer.read(MAX_EVENT_BYTES + 1)
    answer = decide_event(
        raw, plan_path=args.plan, agent=args.agent, stage=args.stage, workspace=args.workspace
    )
    sys.stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
    sys.stdout.flush()
    return 0
