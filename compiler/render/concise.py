"""``path:line:col: CODE name: message``, one finding a line, then a summary.

The shape editors and ``grep`` already understand (a problem matcher can read
it). Suppressed findings are left out; the summary counts them.
"""

from __future__ import annotations

from collections.abc import Sequence

from charter.compiler.diagnostics import Diagnostic
from charter.compiler.render._common import count, ordered

__all__ = ["concise_line", "render_concise"]


def concise_line(d: Diagnostic) -> str:
    # Newlines inside a message would break the one-finding-a-line contract.
    message = " ".join(d.message.split("\n"))
    return f"{d.span.path}:{d.span.line}:{d.span.col}: {d.code} {d.name}: {message}"


def render_concise(diagnostics: Sequence[Diagnostic], suppressed: Sequence[Diagnostic]) -> str:
    lines = [concise_line(d) for d in ordered(diagnostics)]
    lines.append(count(diagnostics, suppressed).summary())
    return "\n".join(lines) + "\n"
