"""``charter show PLAN_OR_PROJECT``: every agent's stages, tools and decisions.

A plan file is read through the runtime's loader, so a tampered plan is
refused here as it would be at run time (exit 2 with the reason); a project
directory is compiled first. Each decision comes with its provenance as the
plan records it: every scope that said something, with the ``file:line`` it
said it at, and every clamp that changed it. Each stage's sandbox profile
(where its commands run) follows the decisions.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from charter.compiler.cli._options import add_format
from charter.compiler.cli._plan_arg import (
    add_plan_operand,
    add_project_options,
    load_plan_or_project,
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_plan_operand(p, "plan")
    p.add_argument("--agent", help="only this agent")
    add_format(p, extra=("table",), default=None, help="default: table on a terminal, else text")
    add_project_options(p)


def provenance(decision: Any) -> list[dict[str, Any]]:
    """What produced a decision, in the order the plan records it: each scope
    that set a value and each clamp, with where it was written (``file:line``
    relative to the project root) when the plan knows."""
    out: list[dict[str, Any]] = []
    for s in decision.scopes:
        if s.value is None:
            continue
        where = f"{s.source.path}:{s.source.line}" if s.source is not None else None
        out.append({"scope": s.scope, "value": s.value, "source": where, "detail": s.detail})
    for c in decision.clamps:
        where = f"{c.source.path}:{c.source.line}" if c.source is not None else None
        out.append(
            {
                "clamp": c.rule,
                "before": c.before,
                "after": c.after,
                "reason": c.reason,
                "source": where,
            }
        )
    return out


def explain(decision: Any) -> str:
    """The provenance in one line: ``stage=ask (agent.leviath:51), agent=ask
    (agent.leviath:21), builtin_default=ask``, clamps after a semicolon."""
    said: list[str] = []
    clamps: list[str] = []
    for p in provenance(decision):
        at = f" ({p['source']})" if p["source"] else ""
        if "scope" in p:
            said.append(f"{p['scope']}={p['value']}{at}")
        else:
            clamps.append(f"{p['clamp']}: {p['before']} -> {p['after']} ({p['reason']}){at}")
    return "; ".join([", ".join(said) or "no scope set it", *clamps])


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
                        "why": explain(d),
                        "provenance": provenance(d),
                    }
                )
    return out


def script_permissions(plan: Any, agent_filter: str | None = None) -> dict[str, dict[str, Any]]:
    """Per agent with script tools, what each script host function may do:
    the value, where it came from and what a call gets."""
    out: dict[str, dict[str, Any]] = {}
    for agent in plan.body.agents:
        perms = agent.script_permissions
        if perms is None or (agent_filter and agent.name != agent_filter):
            continue
        shown: dict[str, Any] = {}
        for fn in type(perms).model_fields:
            p = getattr(perms, fn)
            shown[fn] = {"value": p.value, "effective": p.effective, "set_by": p.detail}
        out[agent.name] = shown
    return out


def sandbox_rows(plan: Any, agent_filter: str | None = None) -> list[dict[str, Any]]:
    """One row per (agent, stage): where its commands run."""
    from charter.runtime import describe_profile

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
                    "summary": describe_profile(p),
                    "profile": p.model_dump(mode="json"),
                }
            )
    return out


def _script_lines(perms: dict[str, dict[str, Any]]) -> list[str]:
    return [
        f"{agent}: tool_script_permissions "
        + ", ".join(f"{fn}={p['value']}->{p['effective']} ({p['set_by']})" for fn, p in fns.items())
        for agent, fns in perms.items()
    ]


def run(args: argparse.Namespace) -> int:
    loaded = load_plan_or_project(
        args.plan, config=args.config, use_user_config=not args.no_user_config
    )
    if isinstance(loaded, str):
        print(f"charter show: {loaded}", file=sys.stderr)
        return 2
    plan = loaded.plan
    if args.agent and plan.body.agent(args.agent) is None:
        names = ", ".join(a.name for a in plan.body.agents)
        print(
            f"charter show: no agent '{args.agent}' in the plan (agents: {names})", file=sys.stderr
        )
        return 2
    data = rows(plan, args.agent)
    scripts = script_permissions(plan, args.agent)
    boxes = sandbox_rows(plan, args.agent)
    fmt = args.format or ("table" if sys.stdout.isatty() else "text")
    if fmt == "json":
        shown: dict[str, Any] = {"digest": plan.digest, "rows": data, "sandboxes": boxes}
        if scripts:
            shown["script_permissions"] = scripts
        json.dump(shown, sys.stdout, indent=2, sort_keys=True)
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
        for line in _script_lines(scripts):
            print(line)
        for b in boxes:
            print(f"{b['agent']}/{b['stage']}\tsandbox\t{b['summary']}")
        return 0
    _print_tables(plan.digest, data, scripts, boxes)
    return 0


_COLOURS = {"allow": "32", "ask": "33", "deny": "31"}  # green, yellow, red


def _print_tables(
    digest: str,
    data: list[dict[str, Any]],
    scripts: dict[str, dict[str, Any]],
    boxes: list[dict[str, Any]],
) -> None:
    """The decisions and the sandboxes as tables that fit the terminal
    (``COLUMNS`` when set), wrapped at word boundaries."""
    import shutil

    from charter.compiler.cli._table import render_table
    from charter.runtime import wants_colour

    width = shutil.get_terminal_size(fallback=(100, 24)).columns
    colour = wants_colour(sys.stdout)

    def paint(code: str) -> Callable[[str], str]:
        return lambda text: f"\x1b[{code}m{text}\x1b[0m" if colour else text

    def decision(text: str) -> str:
        return paint(_COLOURS.get(text, "0"))(text)

    headers = ("agent", "stage", "tool", "source", "capability", "decision", "liftable", "why")
    cells = [
        (
            r["agent"],
            r["stage"],
            r["tool"],
            r["source"],
            r["capability"] or "-",
            r["decision"],
            "yes" if r["liftable"] else "no",
            r["why"],
        )
        for r in data
    ]
    lines = render_table(
        headers,
        cells,
        width,
        lead=3,
        styles={5: decision},
        header_style=paint("1"),
        title=f"plan {digest[:19]}…",
    )
    lines += _script_lines(scripts)
    if boxes:
        box_cells = [(b["agent"], b["stage"], b["summary"]) for b in boxes]
        lines += [""] + render_table(
            ("agent", "stage", "sandbox"),
            box_cells,
            width,
            lead=2,
            header_style=paint("1"),
            title="where commands run (sandbox)",
        )
    sys.stdout.write("\n".join(lines) + "\n")
