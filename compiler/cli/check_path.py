"""``charter check-path``: the workspace confinement decision for one path.

Exit codes: 0 allow, 1 deny, 3 ask, 2 usage errors. ``--jsonl`` reads lines
``{"id", "path", "op"}`` from stdin and answers ``{"id", "decision", "rule",
"reason"}`` per line, the batch form shared by the check verbs (see
``_jsonl``). Imports only ``charter.runtime``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

# The front door loads nothing until a name is used.
import charter.compiler.cli._jsonl as _jsonl
import charter.runtime as runtime

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", nargs="?", help="path as a tool would receive it")
    p.add_argument("--workspace", required=True, help="workspace directory")
    p.add_argument("--op", choices=("read", "write"), default="read")
    _jsonl.add_batch_options(p, "read paths as JSON lines from stdin")


def _line(req: dict[str, Any], workspace: str, default_op: str) -> dict[str, Any]:
    path = _jsonl.text_field(req, "path")
    assert path is not None
    op = req.get("op", default_op)
    if op not in ("read", "write"):
        raise _jsonl.BadLine("'op' must be read or write", req.get("id"))
    found = runtime.decide_path(workspace, path, op)
    return {"decision": found["decision"], "rule": found["rule"], "reason": found["message"]}


def run(args: argparse.Namespace) -> int:
    if _jsonl.operand_problem("check-path", args.path, args.jsonl, operand="PATH", items="paths"):
        return 2

    def one(path: str) -> int:
        found = runtime.decide_path(args.workspace, path, args.op)
        if args.format == "json":
            print(json.dumps(found, ensure_ascii=False, indent=2))
        else:
            print(f"{found['decision']}  [{found['rule']}]  {found['message']}")
            if found.get("resolved"):
                print(f"resolved: {found['resolved']}")
        return _jsonl.exit_code(found["decision"])

    return _jsonl.one_or_batch(
        args.path, args.jsonl, one, lambda req: _line(req, args.workspace, args.op)
    )
