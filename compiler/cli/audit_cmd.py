"""``charter audit LOG``: show an audit log as a table, or check it.

A table as wide as the terminal on one (wrapped between words), aligned plain
text otherwise, or ``--format
json`` (one JSON array of the events). Unreadable lines (a torn last line of
a killed run) are reported on stderr and skipped. Exit 0, or 2 when the log
cannot be read.

``charter audit --verify LOG`` checks the log's hash chain and its seal (see
``charter.runtime.audit``): exit 0 for an intact log, 1 naming the first bad
line for an edited, reordered or truncated one, 2 when it cannot be read.
Imports only ``charter.runtime``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

# The front door loads nothing until a name is used.
import charter.runtime as runtime
from charter.compiler.cli._options import add_format

__all__ = ["add_arguments", "run"]

_COLUMNS = ("time", "event", "agent", "stage", "tool", "decision", "gate", "rule", "status", "ms")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("log", help="audit log (JSON lines)")
    add_format(p)
    p.add_argument(
        "--verify",
        action="store_true",
        help="check the hash chain and the seal: exit 0 intact, 1 at the first bad line",
    )


def _row(e: dict[str, Any]) -> tuple[str, ...]:
    timings = e.get("timings") or {}
    ms = ""
    if isinstance(timings, dict):
        if "run_ms" in timings:
            ms = str(timings["run_ms"])
        elif "decide_us" in timings:
            ms = f"{timings['decide_us'] / 1000:.2f}"
    ts = str(e.get("ts", ""))
    return (
        ts[11:23] if len(ts) >= 23 else ts,
        str(e.get("event", "")),
        str(e.get("agent", "")),
        str(e.get("stage", "")),
        str(e.get("tool", "")),
        str(e.get("decision", "")),
        str(e.get("gate", "")),
        str(e.get("rule", "")),
        str(e.get("status", "")),
        ms,
    )


def _print_table(title: str, rows: list[tuple[str, ...]]) -> None:
    """The events as a table as wide as the terminal, wrapped between words,
    a deny in red and an ask in yellow."""
    import shutil

    from charter.compiler.cli._table import render_table
    from charter.runtime import wants_colour

    colour = wants_colour(sys.stdout)
    codes = {"deny": "31", "ask": "33", "allow": "32"}

    def decision(text: str) -> str:
        code = codes.get(text)
        return f"\x1b[{code}m{text}\x1b[0m" if colour and code else text

    width = shutil.get_terminal_size(fallback=(100, 24)).columns
    lines = render_table(_COLUMNS, rows, width, lead=2, styles={5: decision}, title=title)
    sys.stdout.write("\n".join(lines) + "\n")


def _verify(args: argparse.Namespace) -> int:
    try:
        found = runtime.verify_log(args.log)
    except OSError as exc:
        print(f"charter audit: cannot read {args.log}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if args.format == "json":
        print(
            json.dumps(
                {
                    "log": str(args.log),
                    "intact": found.ok,
                    "events": found.events,
                    "head": found.head,
                    "line": found.line,
                    "problem": found.problem or None,
                }
            )
        )
    elif found.ok:
        print(f"{args.log}: intact: {found.events} events, sealed; last hash {found.head}")
    else:
        print(f"{args.log}:{found.line}: {found.problem}")
    return 0 if found.ok else 1


def run(args: argparse.Namespace) -> int:
    if args.verify:
        return _verify(args)

    try:
        found = runtime.read_events(args.log)
    except OSError as exc:
        print(f"charter audit: cannot read {args.log}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    for problem in found.problems:
        print(f"charter audit: {args.log}: {problem}", file=sys.stderr)
    if args.format == "json":
        print(json.dumps(found.events, ensure_ascii=False, indent=2))
        return 0
    rows = [_row(e) for e in found.events]
    if sys.stdout.isatty():
        _print_table(f"{args.log}: {len(rows)} events", rows)
        return 0
    widths = [max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(_COLUMNS)]
    print("  ".join(c.ljust(w) for c, w in zip(_COLUMNS, widths, strict=True)).rstrip())
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
    return 0
