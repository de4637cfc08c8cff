"""``charter rules`` lists the rule catalog; ``charter rule CODE`` explains one.

``charter rule`` accepts a code (``CH201``, any case) or a name
(``unknown-key``) and prints the rule's four-part doc: what it checks, why it
matters, an example, how to fix. An unknown rule is a usage error (exit 2)
with the closest match suggested.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from charter.compiler.cli._options import add_format

if TYPE_CHECKING:
    from charter.compiler.rules import Rule

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    # One module serves both verbs; argparse names the sub-parser after its verb.
    if p.prog.rsplit(" ", 1)[-1] == "rule":
        p.add_argument("rule", metavar="CODE_OR_NAME", help="a rule code (CH201) or name")
        add_format(p, extra=("markdown",))
    else:
        # The list is aligned plain text: the shared `text` (once `table`).
        add_format(p, aliases={"table": "text"})


def run(args: argparse.Namespace) -> int:
    from charter.compiler.rules import RULES

    if getattr(args, "rule", None) is None:
        rules = [RULES[code] for code in sorted(RULES)]
        sys.stdout.write(
            _json([_as_dict(r) for r in rules]) if args.format == "json" else _table(rules)
        )
        return 0
    return _explain(args.rule, args.format)


def _explain(token: str, fmt: str) -> int:
    from charter.compiler.diagnostics import did_you_mean
    from charter.compiler.lint.suppress import resolve_rule
    from charter.compiler.rules import RULES

    r = resolve_rule(token)
    if r is None:
        names = {x.name: x for x in RULES.values()}
        guess = did_you_mean(token.upper(), RULES) or did_you_mean(token.lower(), names)
        hint = ""
        if guess is not None:
            found = RULES.get(guess) or names[guess]
            hint = f"; did you mean {found.code} ({found.name})?"
        print(f"charter rule: unknown rule '{token}'{hint}", file=sys.stderr)
        print("run 'charter rules' to list every rule", file=sys.stderr)
        return 2
    if fmt == "json":
        sys.stdout.write(_json(_as_dict(r)))
    elif fmt == "markdown":
        from charter.compiler.render.sarif import rule_help_markdown

        sys.stdout.write(f"# {r.code} {r.name} ({r.severity.value})\n\n{rule_help_markdown(r)}")
    else:
        sys.stdout.write(_text(r))
    return 0


def _as_dict(r: Rule) -> dict[str, str]:
    return {
        "code": r.code,
        "name": r.name,
        "severity": r.severity.value,
        "summary": r.summary,
        "why": r.why,
        "example": r.example,
        "fix": r.fix,
    }


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def _table(rules: list[Rule]) -> str:
    rows = [("CODE", "NAME", "SEVERITY", "SUMMARY")]
    rows += [(r.code, r.name, r.severity.value, r.summary) for r in rules]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True))
        + "  "
        + row[3]
        for row in rows
    ]
    return "\n".join(lines) + f"\n\n{len(rules)} rules. 'charter rule CODE' explains one.\n"


def _text(r: Rule) -> str:
    def indent(text: str, by: str) -> str:
        return "\n".join(by + line if line else line for line in text.rstrip("\n").split("\n"))

    return (
        f"{r.code} {r.name} ({r.severity.value})\n\n"
        f"What it checks\n{indent(r.summary, '  ')}\n\n"
        f"Why it matters\n{indent(r.why, '  ')}\n\n"
        f"Example\n{indent(r.example, '    ')}\n\n"
        f"How to fix\n{indent(r.fix, '  ')}\n"
    )
