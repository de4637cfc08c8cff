"""One JSON object describing a whole run, for scripts and dashboards.

The shape is versioned by ``schema``; keys are only ever added. Suppressed
findings are included with ``suppressed: true`` so an audit can see what was
silenced and how (``suppression``: ``inline`` or ``config``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from charter.compiler.diagnostics import Diagnostic
from charter.compiler.render._common import count, exit_code, ordered, suppression_kind

__all__ = ["SCHEMA_VERSION", "finding_object", "render_json"]

SCHEMA_VERSION = 1


def finding_object(d: Diagnostic, *, suppressed: bool) -> dict[str, Any]:
    end_line, end_col = d.span.end
    kind = suppression_kind(d)
    return {
        "code": d.code,
        "name": d.name,
        "severity": d.severity.value,
        "message": d.message,
        "path": d.span.path,
        "line": d.span.line,
        "col": d.span.col,
        "end": {"line": end_line, "col": end_col},
        "key_path": d.key_path,
        "help": d.help,
        "suppressed": suppressed,
        "suppression": (kind or "inline") if suppressed else None,
        "data": {k: v for k, v in d.data if k != "suppression"},
    }


def render_json(
    diagnostics: Sequence[Diagnostic], suppressed: Sequence[Diagnostic], *, deny_warnings: bool
) -> str:
    counts = count(diagnostics, suppressed)
    rows = [(d, False) for d in set(diagnostics)] + [(d, True) for d in set(suppressed)]
    rows.sort(key=lambda row: (row[0].sort_key(), row[1]))
    doc = {
        "schema": SCHEMA_VERSION,
        "valid": exit_code(ordered(diagnostics), deny_warnings=deny_warnings) == 0,
        "errors": counts.errors,
        "warnings": counts.warnings,
        "notes": counts.notes,
        "suppressed": counts.suppressed,
        "findings": [finding_object(d, suppressed=s) for d, s in rows],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
