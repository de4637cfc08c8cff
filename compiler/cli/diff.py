"""``charter diff OLD NEW``: what a change to agent config does to the
compiled decisions, for review on a pull request. Each side is a plan file or
a project directory (compiled first).

Reports tools added or removed per agent, decisions and capabilities that
changed per stage, with the provenance of the new decision, and every change
to a stage's sandbox profile. ``--fail-on-loosen`` exits 1 when any decision
became looser (deny to ask or allow, ask to allow), a tool appeared already
allowed, or a sandbox got looser (see ``charter.runtime.sandbox.profile``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from charter.compiler.cli._options import add_format
from charter.compiler.cli._plan_arg import add_project_options, load_plan_or_project
from charter.compiler.cli.show import explain
from charter.runtime.plan.vocabulary import RANK


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("old", type=Path, metavar="OLD", help="a plan file or a project directory")
    p.add_argument("new", type=Path, metavar="NEW", help="a plan file or a project directory")
    add_project_options(p)
    add_format(p)
    p.add_argument("--fail-on-loosen", action="store_true", help="exit 1 if anything loosened")


def _index(plan: Any) -> dict[tuple[str, str, str], dict[str, Any]]:
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for agent in plan.body.agents:
        tools = {t.name: t for t in agent.tools}
        for stage in agent.stages:
            for st in stage.tools:
                tool = tools.get(st.name)
                out[(agent.name, stage.name, st.name)] = {
                    "decision": st.decision.permission,
                    "liftable": st.decision.liftable,
                    "capability": tool.capability if tool else None,
                    "source": tool.source if tool else "mcp",
                    "why": explain(st.decision),
                    "unattended": st.name in stage.unattended,
                }
    return out


def compare(old: Any, new: Any) -> list[dict[str, Any]]:
    a, b = _index(old), _index(new)
    changes: list[dict[str, Any]] = []
    for key in sorted(set(a) | set(b)):
        agent, stage, tool = key
        before, after = a.get(key), b.get(key)
        base = {"agent": agent, "stage": stage, "tool": tool}
        if before is None and after is not None:
            changes.append(
                {
                    **base,
                    "change": "added",
                    "after": after["decision"],
                    "loosened": after["decision"] == "allow",
                    "why": after["why"],
                }
            )
        elif after is None and before is not None:
            changes.append(
                {**base, "change": "removed", "before": before["decision"], "loosened": False}
            )
        elif before is not None and after is not None:
            if before["decision"] != after["decision"]:
                changes.append(
                    {
                        **base,
                        "change": "decision",
                        "before": before["decision"],
                        "after": after["decision"],
                        "loosened": RANK[after["decision"]] < RANK[before["decision"]],
                        "why": after["why"],
                    }
                )
            if before["capability"] != after["capability"]:
                changes.append(
                    {
                        **base,
                        "change": "capability",
                        "before": before["capability"],
                        "after": after["capability"],
                        "loosened": False,
                    }
                )
            if before["unattended"] != after["unattended"]:
                changes.append(
                    {
                        **base,
                        "change": "unattended",
                        "before": before["unattended"],
                        "after": after["unattended"],
                        "loosened": after["unattended"],
                    }
                )
    return changes


def compare_sandboxes(old: Any, new: Any) -> list[dict[str, Any]]:
    """Sandbox profile changes per (agent, stage) present in both plans."""
    from charter.runtime import compare_profiles

    out: list[dict[str, Any]] = []
    before = {(a.name, s.name): s.sandbox for a in old.body.agents for s in a.stages}
    for agent in new.body.agents:
        for stage in agent.stages:
            key = (agent.name, stage.name)
            if key not in before:
                continue
            for c in compare_profiles(before[key], stage.sandbox):
                out.append(
                    {
                        "agent": agent.name,
                        "stage": stage.name,
                        "tool": "(sandbox)",
                        **c,
                        "change": "sandbox",
                    }
                )
    return out


def run(args: argparse.Namespace) -> int:
    plans = []
    for target in (args.old, args.new):
        loaded = load_plan_or_project(
            target, config=args.config, use_user_config=not args.no_user_config
        )
        if isinstance(loaded, str):
            print(f"charter diff: {loaded}", file=sys.stderr)
            return 2
        plans.append(loaded.plan)
    old, new = plans
    changes = compare(old, new) + compare_sandboxes(old, new)
    loosened = any(c["loosened"] for c in changes)
    if args.format == "json":
        json.dump(
            {"old": old.digest, "new": new.digest, "changes": changes, "loosened": loosened},
            sys.stdout,
            indent=2,
            sort_keys=True,
        )
        sys.stdout.write("\n")
    else:
        if not changes:
            print("no decision changed")
        for c in changes:
            where = f"{c['agent']}/{c['stage']} {c['tool']}"
            mark = "LOOSER " if c["loosened"] else ""
            if c["change"] == "added":
                print(f"+ {where}: {mark}{c['after']}  ({c['why']})")
            elif c["change"] == "removed":
                print(f"- {where}: was {c['before']}")
            elif c["change"] == "decision":
                print(f"~ {where}: {mark}{c['before']} -> {c['after']}  ({c['why']})")
            elif c["change"] == "sandbox":
                print(
                    f"~ {c['agent']}/{c['stage']} sandbox {c['key']}: {mark}{c['before']} -> "
                    f"{c['after']}"
                )
            else:
                print(f"~ {where}: {c['change']} {c['before']} -> {c['after']}")
    return 1 if (args.fail_on_loosen and loosened) else 0
