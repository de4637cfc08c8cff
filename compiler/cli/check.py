"""``charter check``: what the gates would decide for one tool call, and why.

Decides and never executes. ``PLAN_OR_PROJECT`` is a plan file or a project
directory (compiled first). Exit codes: 0 allow, 1 deny, 3 ask, 2 usage or
plan errors. With ``--jsonl`` every stdin line ``{"id", "tool", "args",
"stage"}`` gets one decision object on stdout, the shared batch form of the
check verbs (see ``_jsonl``: a line that cannot be read is answered ``deny``
with gate ``input``; the exit code is the most restrictive answer's, 2 when
a line was malformed).

Given a plan file this module imports only ``charter.runtime`` (the runtime
half of Charter), so a policy check never loads the compiler.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

# The front door loads nothing until a name is used.
import charter.compiler.cli._jsonl as _jsonl
import charter.runtime as runtime
from charter.compiler.cli._plan_arg import (
    add_plan_operand,
    add_project_options,
    prepared_plan_or_project,
)

__all__ = ["INTERMIXED", "add_arguments", "run"]

# Options may come between the positionals (``PLAN --agent A TOOL ARGS``):
# plain argparse fills every optional positional (``TOOL`` is absent in
# ``--jsonl`` mode) in the first run of positionals, so ``TOOL`` after
# ``--agent`` would be refused; the CLI reads this verb with argparse's
# intermixed parsing, options first (see charter.compiler.cli._parse).
INTERMIXED = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_plan_operand(p, "plan")
    p.add_argument("tool", nargs="?", help="tool name as the model would call it")
    p.add_argument("args_json", nargs="?", default="{}", help="arguments as a JSON object")
    p.add_argument("--agent", required=True, help="agent in the plan")
    p.add_argument("--stage", help="stage (default: the agent's entry stage)")
    p.add_argument("--unattended", action="store_true", help="use the unattended tool set")
    p.add_argument("--yolo", action="store_true", help="lift every liftable ask")
    p.add_argument(
        "--allow", action="append", default=[], metavar="TOOL", help="lift TOOL's ask (repeatable)"
    )
    p.add_argument("--workspace", default=".", help="workspace directory (default: .)")
    _jsonl.add_batch_options(p, "read calls as JSON lines from stdin")
    add_project_options(p)


def _text(out: dict[str, Any]) -> str:
    lines = [
        f"decision: {out['decision']}",
        f"gate:     {out['gate']}",
        f"rule:     {out['rule']}",
        f"reason:   {out['reason']}",
    ]
    prov = out.get("provenance") or {}
    if prov:
        lines.append("provenance:")
        for s in prov.get("scopes", []):
            where = f" ({s['source']})" if s.get("source") else ""
            value = s["value"] if s["value"] is not None else "-"
            lines.append(f"  {s['scope']:<16} {value}{where}")
        for c in prov.get("clamps", []):
            lines.append(f"  clamp {c['rule']}: {c['before']} -> {c['after']} ({c['reason']})")
        flags = prov.get("flags", {})
        if flags:
            lines.append(
                f"  flags            yolo={flags.get('yolo')} allow={flags.get('allow')} "
                f"unattended={flags.get('unattended')}"
            )
        if "shell_guard" in prov:
            g = prov["shell_guard"]
            lines.append(f"  shell guard      {g['decision']} ({g['rule']})")
        if "write_file" in prov:
            lines.append(f"  write_file       {prov['write_file']}")
        if "dataflow" in prov:
            d = prov["dataflow"]
            lines.append(f"  data flow        {d['decision']} ({d['rule']}) targets={d['targets']}")
    for p in out.get("paths", []):
        lines.append(f"path {p['arg']} ({p['op']}): {p['decision']} [{p['rule']}] {p['message']}")
    if "fingerprint" in out:
        lines.append(f"fingerprint: {out['fingerprint']}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    # Only this agent is validated, and each argument validator is built
    # when a call first needs it: a one-shot check pays for nothing else.
    prepared = prepared_plan_or_project(
        args.plan, [args.agent], config=args.config, use_user_config=not args.no_user_config
    )
    if isinstance(prepared, str):
        print(f"charter check: {prepared}", file=sys.stderr)
        return 2
    sessions: dict[str | None, runtime.Session] = {}

    def session_for(stage: str | None) -> runtime.Session:
        if stage not in sessions:
            sessions[stage] = runtime.open_session(
                prepared,
                args.agent,
                workspace=args.workspace,
                stage=stage,
                unattended=args.unattended,
                yolo=args.yolo,
                allow=args.allow,
            )
        return sessions[stage]

    try:
        session_for(args.stage)
    except runtime.SessionError as exc:
        print(f"charter check: {exc}", file=sys.stderr)
        return 2

    if _jsonl.operand_problem("check", args.tool, args.jsonl, operand="TOOL", items="calls"):
        return 2

    def answer(req: dict[str, Any]) -> dict[str, Any]:
        tool = _jsonl.text_field(req, "tool")
        call_args = req.get("args", {})
        stage = _jsonl.text_field(req, "stage", required=False) or args.stage
        if not tool:
            raise _jsonl.BadLine("'tool' must be a non-empty string", req.get("id"))
        if not isinstance(call_args, dict):
            raise _jsonl.BadLine("'args' must be a JSON object", req.get("id"))
        try:
            session = session_for(stage)
        except runtime.SessionError as exc:
            raise _jsonl.BadLine(str(exc), req.get("id")) from None
        call = runtime.ToolCall(tool, call_args, str(req.get("id") or ""))
        return runtime.decide(session, call).to_json()

    def one(tool: str) -> int:
        from charter.runtime import jsonbound

        try:
            call_args = jsonbound.loads(args.args_json)
        except json.JSONDecodeError as exc:
            print(
                f"charter check: ARGS_JSON is not JSON (column {exc.colno}: {exc.msg})",
                file=sys.stderr,
            )
            return 2
        except jsonbound.RepeatedKey as exc:
            print(f"charter check: ARGS_JSON cannot be read: {exc}", file=sys.stderr)
            return 2
        except (RecursionError, ValueError):
            # Nested past the parser's stack, or an integer of thousands of digits.
            print(
                "charter check: ARGS_JSON cannot be read (nested too deeply, or a number too long)",
                file=sys.stderr,
            )
            return 2
        if not isinstance(call_args, dict):
            print("charter check: ARGS_JSON must be a JSON object", file=sys.stderr)
            return 2
        outcome = runtime.decide(session_for(args.stage), runtime.ToolCall(tool, call_args))
        result = outcome.to_json()
        if args.format == "json":
            print(json.dumps(result, ensure_ascii=True, indent=2))
        else:
            print(_text(result))
        return _jsonl.exit_code(outcome.decision)

    return _jsonl.one_or_batch(
        args.tool, args.jsonl, one, answer, malformed={"gate": "input", "provenance": {}}
    )
