"""``charter check-url``: ask the URL policy about one URL or a stream of them.

By default the decision is made offline on the literal host: an IP literal is
allowed or denied, a refused name (metadata, localhost) is denied, and any
other name answers ``needs-dns``. ``--resolve`` resolves such names with the
system resolver and judges every answer, as the runtime does before it
connects.

Exit codes, as for the other check verbs: 0 allow, 1 deny, 3 ask (a name
that only its DNS answers can decide is an ask, rule ``needs-dns``), 2 usage
or I/O errors. ``--jsonl``
reads ``{"id", "url"}`` lines from stdin and answers ``{"id", "decision",
"rule", "reason", "normalized"}`` per line, the batch form shared by the
check verbs (see ``_jsonl``): the exit code is the worst over all lines (deny
over needs-dns over allow), and 2 if any input line was malformed.

The HTTP stack is never imported here: deciding needs only the standard
library.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import IO, TYPE_CHECKING, Any

# The front door loads nothing until a name is used.
import charter.compiler.cli._jsonl as _jsonl
import charter.runtime as runtime

if TYPE_CHECKING:
    from charter.runtime import Resolver, UrlVerdict

__all__ = ["add_arguments", "run"]


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
    _jsonl.add_batch_options(
        p,
        'read {"id", "url"} objects, one a line, from stdin and write '
        '{"id", "decision", "rule", "reason", "normalized"} lines',
    )


def run(args: argparse.Namespace) -> int:
    if _jsonl.operand_problem("check-url", args.url, args.jsonl, operand="URL", items="URLs"):
        return 2
    policy = runtime.UrlPolicy(allow_local_network=args.allow_local_network)
    resolver: Resolver | None = runtime.SystemResolver() if args.resolve else None

    def one(url: str) -> int:
        decision = policy.check(url, resolver)
        _print_one(decision, args.format, sys.stdout)
        return _jsonl.exit_code(decision.verdict)

    def answer(record: dict[str, Any]) -> dict[str, Any]:
        url = _jsonl.text_field(record, "url")
        assert url is not None
        d = policy.check(url, resolver)
        return {
            "decision": _jsonl.permission_of(d.verdict),
            "rule": d.reason,
            "reason": d.detail or d.reason,
            "normalized": d.normalized,
        }

    return _jsonl.one_or_batch(args.url, args.jsonl, one, answer, malformed={"normalized": None})


def _print_one(decision: UrlVerdict, fmt: str, out: IO[str]) -> None:
    if fmt == "json":
        out.write(json.dumps(decision.as_dict()) + "\n")
        return
    # As the other check verbs print: the vocabulary's word, the rule, why.
    # needs-dns is an ask (something that can resolve the name must decide).
    word = _jsonl.permission_of(decision.verdict)
    why = decision.detail or decision.reason
    if decision.verdict == "needs-dns":
        why += " (pass --resolve to look it up)"
    out.write(f"{word}  [{decision.reason}]  {why}\n")
    if decision.normalized is not None:
        out.write(f"  url:     {decision.normalized}\n")
    if decision.addresses:
        out.write(f"  address: {', '.join(decision.addresses)}\n")
