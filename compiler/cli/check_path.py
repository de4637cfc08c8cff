"""``charter check-path``: the workspace confinement decision for one path.

Exit codes: 0 allow, 1 deny, 3 ask, 2 usage errors. ``--jsonl`` reads lines
``{"id", "path", "op"}`` from stdin and answers ``{"id", "decision", "rule",
"reason"}`` per line, the batch form shared by the check verbs (see
``_jsonl``). Imports only ``charter.runtime``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["add_arguments", "run"]

_EXIT = {"allow": 0, "deny": 1, "ask": 3}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", nargs="?", help="path as a tool would receive it")
    p.add_argument("--workspace", required=True, help="workspace directory")
    p.add_argument("--op", choices=("read", "write"), default="read")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--jsonl", action="store_true", help="read paths as JSON lines from stdin")


def _line(req: dict[str, Any], workspace: str, default_op: str) -> dict[str, Any]:
    from charter.compiler.cli._jsonl import BadLine, text_field
    from charter.runtime.workspace import decide_path

    path = text_field(req, "path")
    assert path is not None
    op = req.get("op", default_op)
    if op not in ("read", "write"):
        raise BadLine("'op' must be read or write", req.get("id"))
    found = decide_path(workspace, path, op)
    return {"decision": found["decision"], "rule": found["rule"], "reason": found["message"]}


def run(args: argparse.Namespace) -> int:
    from charter.runtime.workspace import decide_path

    if args.jsonl:
        if args.path is not None:
            print(
                "charter check-path: --jsonl reads paths from stdin; give no PATH", file=sys.stderr
            )
            return 2
        from charter.compiler.cli._jsonl import answer_lines

        return answer_lines(sys.stdin, lambda req: _line(req, args.workspace, args.op), sys.stdout)
    if args.path is None:
        print("charter check-path: give a PATH (or use --jsonl)", file=sys.stderr)
        return 2
    found = decide_path(args.workspace, args.path, args.op)
    if args.format == "json":
        print(json.dumps(found, ensure_ascii=False, indent=2))
    else:
        print(f"{found['decision']}  [{found['rule']}]  {found['message']}")
        if found.get("resolved"):
            print(f"resolved: {found['resolved']}")
    return _EXIT.get(found["decision"], 1)
