"""GitHub Actions workflow commands, one per finding, which GitHub shows as
annotations on the pull request's diff.

``::error file=F,line=L,col=C,endLine=L2,endColumn=C2,title=CODE name::message``
with ``::warning`` and ``::notice`` for the other severities. GitHub decodes
``%25``, ``%0D`` and ``%0A`` in the message, and additionally ``%3A`` and
``%2C`` in property values, where a raw ``:`` or ``,`` would end the value.
Suppressed findings are never annotated.
"""

from __future__ import annotations

from collections.abc import Sequence

from charter.compiler.diagnostics import Diagnostic, Severity
from charter.compiler.render._common import ordered

__all__ = ["escape_data", "escape_property", "render_github"]

_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "notice"}


def escape_data(text: str) -> str:
    # ``%`` first, or the escapes added after it would be escaped again.
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(diagnostics: Sequence[Diagnostic]) -> str:
    out = []
    for d in ordered(diagnostics):
        end_line, end_col = d.span.end
        props = [
            ("file", d.span.path),
            ("line", str(d.span.line)),
            ("col", str(d.span.col)),
            ("endLine", str(end_line)),
            # An end before the start only makes sense on a later line.
            ("endColumn", str(max(end_col, d.span.col) if end_line == d.span.line else end_col)),
            ("title", f"{d.code} {d.name}"),
        ]
        message = d.message
        if d.help:
            message += f"\nhelp: {d.help}"
        joined = ",".join(f"{key}={escape_property(value)}" for key, value in props)
        out.append(f"::{_COMMAND[d.severity]} {joined}::{escape_data(message)}")
    return "".join(line + "\n" for line in out)
