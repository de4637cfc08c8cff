"""``charter check-path``: the workspace confinement decision for one path.

Exit codes: 0 allow, 1 deny, 3 ask, 2 usage errors. ``--jsonl`` reads lines
``{"id", "path", "op"}`` and answers ``{"id", "decision", "rule",
"message"}`` per line (a line it cannot read is answered ``deny``). Imports
only ``charter.runtime``.
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


def _malformed(line_id: Any, message: str) -> dict[str, Any]:
    return {"id": line_id, "decision": "deny", "rule": "malformed-request", "message": message}


def _line(req: Any, n: int, workspace: str, default_op: str) -> dict[str, Any]:
    from charter.runtime.workspace import decide_path

    if not isinstance(req, dict):
        return _malformed(None, f"line {n}: not a JSON object")
    line_id, path, op = req.get("id"), req.get("path"), req.get("op", default_op)
    if not isinstance(path, str):
        return _malformed(line_id, f"line {n}: 'path' must be a string")
    if not isinstance(op, str):
        op = repr(op)
    found = decide_path(workspace, path, op)
    return {
        "id": line_id,
        "decision": found["decision"],
        "rule": found["rule"],
        "message": found["message"],
    }


def run(args: argparse.Namespace) -> int:
    from charter.runtime.workspace import decide_path

    if args.jsonl:
        if args.path is not None:
            print(
                "charter check-path: --jsonl reads paths from stdin; give no PATH", file=sys.stderr
            )
            return 2
        for n, raw in enumerate(sys.stdin, 1):
            if not raw.strip():
                continue
            try:
                req = json.loads(raw)
            except json.JSONDecodeError as exc:
                out = _malformed(None, f"line {n}: not JSON ({exc.msg})")
            else:
                out = _line(req, n, args.workspace, args.op)
            sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
            sys.stdout.flush()
        return 0
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
