"""``charter show plan.json``: every agent's stages, tools and decisions.

The plan is read through the runtime's loader, so a tampered plan is refused
here as it would be at run time (exit 2 with the reason).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("plan", type=Path, help="a compiled plan (charter compile -o)")
    p.add_argument("--agent", help="only this agent")
    p.add_argument(
        "--format", choices=("table", "text", "json"), help="default: table on a terminal"
    )


def rows(plan: Any, agent_filter: str | None = None) -> list[dict[str, Any]]:
    """One row per (agent, stage, offered tool)."""
    out: list[dict[str, Any]] = []
    for agent in plan.body.agents:
        if agent_filter and agent.name != agent_filter:
            continue
        tools = {t.name: t for t in agent.tools}
        for stage in agent.stages:
            for st in stage.tools:
                tool = tools.get(st.name)
                d = st.decision
                out.append(
                    {
                        "agent": agent.name,
                        "stage": stage.name,
                        "tool": st.name,
                        "source": tool.source if tool else "mcp",
                        "capability": tool.capability if tool else None,
                        "decision": d.permission,
                        "liftable": d.liftable,
                        "unattended": st.name in stage.unattended,
                        "host_only": bool(tool and tool.host_only),
                        "why": d.explain(),
                    }
                )
    return out


def sandbox_rows(plan: Any, agent_filter: str | None = None) -> list[dict[str, Any]]:
    """One row per (agent, stage): where its commands run."""
    from charter.runtime.sandbox.profile import summary

    out: list[dict[str, Any]] = []
    for agent in plan.body.agents:
        if agent_filter and agent.name != agent_filter:
            continue
        for stage in agent.stages:
            p = stage.sandbox
            if p is None:
                continue
            out.append(
                {
                    "agent": agent.name,
                    "stage": stage.name,
                    "summary": summary(p),
                    "profile": p.model_dump(mode="json"),
                }
            )
    return out


def run(args: argparse.Namespace) -> int:
    from charter.runtime.loader import PlanError, load_plan

    try:
        plan = load_plan(args.plan)
    except PlanError as exc:
        print(f"charter show: {exc}", file=sys.stderr)
        return 2
    if args.agent and plan.body.agent(args.agent) is None:
        names = ", ".join(a.name for a in plan.body.agents)
        print(
            f"charter show: no agent '{args.agent}' in the plan (agents: {names})", file=sys.stderr
        )
        return 2
    data = rows(plan, args.agent)
    boxes = sandbox_rows(plan, args.agent)
    fmt = args.format or ("table" if sys.stdout.isatty() else "text")
    if fmt == "json":
        json.dump(
            {"digest": plan.digest, "rows": data, "sandboxes": boxes},
            sys.stdout,
            indent=2,
            sort_keys=True,
        )
        sys.stdout.write("\n")
        return 0
    if fmt == "text":
        for r in data:
            flags = ("liftable " if r["liftable"] else "") + (
                "" if r["unattended"] else "attended-only "
            )
            flags += "host-only " if r["host_only"] else ""
            print(
                f"{r['agent']}/{r['stage']}\t{r['tool']}\t{r['source']}\t{r['capability'] or '-'}"
                f"\t{r['decision']}\t{flags.strip() or '-'}\t{r['why']}"
            )
        for b in boxes:
            print(f"{b['agent']}/{b['stage']}\tsandbox\t{b['summary']}")
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"plan {plan.digest[:19]}…", show_lines=False)
    for col in ("agent", "stage", "tool", "source", "capability", "decision", "liftable", "why"):
        table.add_column(col, overflow="fold")
    colours = {"allow": "green", "ask": "yellow", "deny": "red"}
    for r in data:
        table.add_row(
            r["agent"],
            r["stage"],
            r["tool"],
            r["source"],
            r["capability"] or "-",
            f"[{colours[r['decision']]}]{r['decision']}[/]",
            "yes" if r["liftable"] else "no",
            r["why"],
        )
    console = Console()
    console.print(table)
    if boxes:
        sandboxes = Table(title="where commands run (sandbox)", show_lines=False)
        for col in ("agent", "stage", "sandbox"):
            sandboxes.add_column(col, overflow="fold")
        for b in boxes:
            sandboxes.add_row(b["agent"], b["stage"], b["summary"])
        console.print(sandboxes)
    return 0
