"""``charter check-url``: ask the URL policy about one URL or a stream of them.

By default the decision is made offline on the literal host: an IP literal is
allowed or denied, a refused name (metadata, localhost) is denied, and any
other name answers ``needs-dns``. ``--resolve`` resolves such names with the
system resolver and judges every answer, as the runtime does before it
connects.

Exit codes: 0 allow, 1 deny, 3 needs-dns, 2 usage or I/O errors. With
``--jsonl`` the exit code is the worst over all lines (deny over needs-dns
over allow), and 2 if any input line was malformed.

The HTTP stack is never imported here: deciding needs only the standard
library.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from charter.runtime.net.resolve import Resolver
    from charter.runtime.net.urlpolicy import Decision, UrlPolicy

__all__ = ["add_arguments", "run"]

_EXIT = {"allow": 0, "deny": 1, "needs-dns": 3}
_SEVERITY = {0: 0, 3: 1, 1: 2}  # exit code -> rank, for the worst-of over many lines


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("url", nargs="?", metavar="URL", help="the URL to decide on")
    p.add_argument(
        "--allow-local-network",
        action="store_true",
        help="open loopback, private and CGNAT ranges and localhost names (never metadata)",
    )
    p.add_argument(
        "--resolve",
        action="store_true",
        help="resolve host names and require every answer to be allowed",
    )
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    p.add_argument(
        "--jsonl",
        metavar="FILE",
        help='read {"id", "url"} objects, one a line, from FILE ("-" for stdin) and write '
        '{"id", "decision", "reason", "normalized"} lines',
    )


def run(args: argparse.Namespace) -> int:
    from charter.runtime.net.resolve import SystemResolver
    from charter.runtime.net.urlpolicy import UrlPolicy

    if (args.url is None) == (args.jsonl is None):
        print("charter check-url: give either a URL or --jsonl FILE", file=sys.stderr)
        return 2
    policy = UrlPolicy(allow_local_network=args.allow_local_network)
    resolver: Resolver | None = SystemResolver() if args.resolve else None
    if args.jsonl is None:
        decision = policy.check(args.url, resolver)
        _print_one(decision, args.format, sys.stdout)
        return _EXIT[decision.verdict]
    if args.jsonl == "-":
        return _run_jsonl(sys.stdin, "<stdin>", policy, resolver, sys.stdout)
    try:
        with open(args.jsonl, encoding="utf-8") as handle:
            return _run_jsonl(handle, args.jsonl, policy, resolver, sys.stdout)
    except OSError as exc:
        print(f"charter check-url: {args.jsonl}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except UnicodeDecodeError as exc:
        print(f"charter check-url: {args.jsonl}: not UTF-8 ({exc.reason})", file=sys.stderr)
        return 2


def _print_one(decision: Decision, fmt: str, out: IO[str]) -> None:
    if fmt == "json":
        out.write(json.dumps(decision.as_dict()) + "\n")
        return
    out.write(f"{decision.verdict}: {decision.reason}\n")
    if decision.normalized is not None:
        out.write(f"  url:     {decision.normalized}\n")
    if decision.addresses:
        out.write(f"  address: {', '.join(decision.addresses)}\n")
    if decision.detail:
        out.write(f"  detail:  {decision.detail}\n")


def _run_jsonl(
    lines: IO[str],
    display: str,
    policy: UrlPolicy,
    resolver: Resolver | None,
    out: IO[str],
) -> int:
    worst = 0
    malformed = False
    for number, line in enumerate(lines, 1):
        if line.strip() == "":
            continue
        record_id: Any = None
        try:
            record = json.loads(line)
            if not isinstance(record, dict):
                raise ValueError("expected a JSON object")
            record_id = record.get("id")
            url = record.get("url")
            if not isinstance(url, str):
                raise ValueError('"url" must be a string')
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            malformed = True
            print(f"charter check-url: {display}:{number}: {exc}", file=sys.stderr)
            # Keep output aligned with input, and never let a bad line read as allowed.
            row = {"id": record_id, "decision": "deny", "reason": "invalid-input"}
            out.write(json.dumps({**row, "normalized": None}) + "\n")
            continue
        decision = policy.check(url, resolver)
        row = {
            "id": record_id,
            "decision": decision.verdict,
            "reason": decision.reason,
            "normalized": decision.normalized,
        }
        out.write(json.dumps(row) + "\n")
        worst = max(worst, _EXIT[decision.verdict], key=_SEVERITY.__getitem__)
    out.flush()
    return 2 if malformed else worst
