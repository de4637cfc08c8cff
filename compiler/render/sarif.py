"""SARIF 2.1.0, the format code-scanning services ingest.

Choices that matter to GitHub code scanning and similar consumers:

* ``rules[]`` carries each reported rule's four-part doc, so the alert page
  explains itself; only rules that appear in the results are listed, in code
  order, and ``ruleIndex`` points into that list.
* Paths stay repo-relative and carry ``uriBaseId`` ``PROJECTROOT``; the base is
  spelled out in ``originalUriBaseIds`` when the caller knows it.
* ``partialFingerprints`` hash the rule, the file, the key path (or the
  message when there is none) and an occurrence number, but not the line, so
  an alert survives edits elsewhere in the file instead of being closed and
  reopened.
* Columns count Unicode code points (``columnKind``), as Charter's spans do.
* Suppressed findings are included with a ``suppressions`` entry: ``inSource``
  for a comment, ``external`` for a config list.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from charter.compiler.diagnostics import Diagnostic, Severity
from charter.compiler.render import _common
from charter.compiler.render._common import suppression_kind
from charter.compiler.rules import RULES, Rule

__all__ = [
    "INFORMATION_URI",
    "SARIF_SCHEMA",
    "render_sarif",
    "rule_help_markdown",
    "rule_help_text",
]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://pypi.org/project/charter-policy/"
ROOT_BASE_ID = "PROJECTROOT"
FINGERPRINT_KEY = "charterFinding/v1"

_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "note"}


def rule_help_text(r: Rule) -> str:
    example = "\n".join("    " + line for line in r.example.rstrip("\n").split("\n"))
    return (
        f"What it checks: {r.summary}\n\nWhy it matters: {r.why}\n\n"
        f"Example:\n{example}\n\nHow to fix: {r.fix}\n"
    )


def rule_help_markdown(r: Rule) -> str:
    fence = "~~~~" if "```" in r.example else "```"
    return (
        f"**What it checks.** {r.summary}\n\n**Why it matters.** {r.why}\n\n"
        f"**Example.**\n\n{fence}\n{r.example.rstrip()}\n{fence}\n\n**How to fix.** {r.fix}\n"
    )


def _descriptor(code: str, name: str, severity: Severity) -> dict[str, Any]:
    r = RULES.get(code)
    if r is None:  # a diagnostic built outside the catalog; describe what we know
        return {
            "id": code,
            "name": name,
            "shortDescription": {"text": name},
            "defaultConfiguration": {"level": _LEVEL[severity]},
        }
    return {
        "id": r.code,
        "name": r.name,
        "shortDescription": {"text": r.summary},
        "fullDescription": {"text": f"{r.summary} {r.why}"},
        "help": {"text": rule_help_text(r), "markdown": rule_help_markdown(r)},
        "defaultConfiguration": {"level": _LEVEL[r.severity]},
    }


def _artifact(path: str) -> dict[str, str]:
    if path.startswith("/"):  # outside the project: an absolute file URI, no base
        return {"uri": "file://" + quote(path)}
    return {"uri": quote(path), "uriBaseId": ROOT_BASE_ID}


def _region(d: Diagnostic) -> dict[str, int]:
    region = {"startLine": d.span.line, "startColumn": d.span.col}
    if d.span.end_line is not None or d.span.end_col is not None:
        end_line, end_col = d.span.end
        region["endLine"] = end_line
        # SARIF's end column is exclusive, like Span's; never before the start.
        region["endColumn"] = max(end_col, d.span.col) if end_line == d.span.line else end_col
    return region


def _fingerprint_base(d: Diagnostic) -> str:
    anchor = d.key_path or d.message
    return "\x1f".join((d.code, d.span.path, anchor))


def render_sarif(
    diagnostics: Sequence[Diagnostic],
    suppressed: Sequence[Diagnostic],
    *,
    root_uri: str | None,
) -> str:
    rows: list[tuple[Diagnostic, str | None]] = [(d, None) for d in set(diagnostics)]
    rows += [(d, suppression_kind(d) or "inline") for d in set(suppressed)]
    rows.sort(key=lambda row: (row[0].sort_key(), row[1] or ""))

    codes = sorted({(d.code, d.name, d.severity) for d, _ in rows}, key=lambda t: t[0])
    rules: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    for code, name, severity in codes:
        if code not in index:
            index[code] = len(rules)
            rules.append(_descriptor(code, name, severity))

    seen: Counter[str] = Counter()
    results = []
    for d, kind in rows:
        text = d.message + (f"\nhelp: {d.help}" if d.help else "")
        location: dict[str, Any] = {
            "physicalLocation": {"artifactLocation": _artifact(d.span.path), "region": _region(d)}
        }
        if d.key_path:
            location["logicalLocations"] = [{"fullyQualifiedName": d.key_path, "kind": "member"}]
        base = _fingerprint_base(d)
        seen[base] += 1
        digest = hashlib.sha256(f"{base}\x1f{seen[base]}".encode()).hexdigest()[:32]
        result: dict[str, Any] = {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": _LEVEL[d.severity],
            "message": {"text": text},
            "locations": [location],
            "partialFingerprints": {FINGERPRINT_KEY: digest},
        }
        if kind is not None:
            result["suppressions"] = [
                {"kind": "external" if kind == "config" else "inSource", "status": "accepted"}
            ]
        results.append(result)

    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "charter",
                "version": _common.tool_version(),
                "informationUri": INFORMATION_URI,
                "rules": rules,
            }
        },
        "columnKind": "unicodeCodePoints",
        "results": results,
    }
    if root_uri is not None:
        uri = root_uri if root_uri.endswith("/") else root_uri + "/"
        run["originalUriBaseIds"] = {ROOT_BASE_ID: {"uri": uri}}
    doc = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
