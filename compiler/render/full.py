"""Each finding with its source excerpt, in the style of rustc and ruff::

    error[CH201] unknown-key: unknown key 'available_tool'
      --> stages/plan.toml:3:1
       |
     2 | [stages.plan]
     3 | available_tool = ["read_file"]
       | ^^^^^^^^^^^^^^
       |
       = key: stages.plan.available_tool
       = help: did you mean 'available_tools'?

rich is imported here and nowhere else on the ``validate`` path: it costs tens
of milliseconds to import and only a person at a terminal needs it. Without
colour the output is plain text, which is what the golden files hold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from io import StringIO
from typing import TYPE_CHECKING

from charter.compiler.diagnostics import Diagnostic, Severity
from charter.compiler.render._common import count, ordered, source_line

if TYPE_CHECKING:
    from rich.text import Text

__all__ = ["render_full"]

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "bold yellow", Severity.NOTE: "bold cyan"}
_TAB = "    "
# A span over many lines shows its first and last lines with an ellipsis between.
_MAX_SPAN_LINES = 4


def render_full(
    diagnostics: Sequence[Diagnostic],
    suppressed: Sequence[Diagnostic],
    sources: Mapping[str, Sequence[str]],
    *,
    color: bool,
) -> str:
    from rich.console import Console
    from rich.text import Text

    buffer = StringIO()
    console = Console(
        file=buffer,
        force_terminal=color,
        no_color=not color,
        color_system="standard" if color else None,
        highlight=False,
        emoji=False,
        markup=False,
        soft_wrap=True,  # never re-wrap source lines: the carets must stay true
        width=200,
    )
    for d in ordered(diagnostics):
        for line in _finding(d, sources):
            console.print(line)
        console.print()
    summary = count(diagnostics, suppressed)
    console.print(Text(summary.summary(), style="bold"))
    return buffer.getvalue()


def _finding(d: Diagnostic, sources: Mapping[str, Sequence[str]]) -> list[Text]:
    from rich.text import Text

    style = _STYLE[d.severity]
    header = Text()
    header.append(f"{d.severity.value}[{d.code}]", style=style)
    header.append(f" {d.name}: ", style="bold")
    header.append(d.message.replace("\n", " "))
    rows = _excerpt(d, sources)
    gutter = max((len(str(n)) for n, _, _ in rows), default=1)
    pad = " " * gutter
    out = [header, Text(f"{pad}--> {d.span.path}:{d.span.line}:{d.span.col}", style="blue")]
    if rows:
        out.append(Text(f"{pad} |", style="blue"))
        for number, shown, marks in rows:
            if number == 0:  # the elided middle of a long span
                out.append(Text(f"{'.' * gutter} |", style="blue"))
                continue
            row = Text(f"{number:>{gutter}} | ", style="blue")
            row.append(shown)
            out.append(row)
            if marks:
                under = Text(f"{pad} | ", style="blue")
                under.append(marks, style=style)
                out.append(under)
        out.append(Text(f"{pad} |", style="blue"))
    if d.key_path:
        out.append(Text(f"{pad} = key: {d.key_path}"))
    if d.help:
        note = Text(f"{pad} = ")
        note.append("help", style="bold")
        note.append(f": {d.help}")
        out.append(note)
    return out


def _excerpt(d: Diagnostic, sources: Mapping[str, Sequence[str]]) -> list[tuple[int, str, str]]:
    """(line number, displayed text, caret marks or "") for the lines to show:
    the line before the span, for context, then the span's lines."""
    from rich.cells import cell_len

    first = d.span.line
    if source_line(sources, d.span.path, first) is None:
        return []
    end_line, end_col = d.span.end
    last = max(first, end_line)
    if last > first and source_line(sources, d.span.path, last) is None:
        # A span running past the end of the file: underline to the end.
        while source_line(sources, d.span.path, last) is None:
            last -= 1
        end_col = len(source_line(sources, d.span.path, last) or "") + 1
    rows: list[tuple[int, str, str]] = []
    before = source_line(sources, d.span.path, first - 1)
    if before is not None and before.strip():
        rows.append((first - 1, before.replace("\t", _TAB), ""))
    numbers = list(range(first, last + 1))
    if len(numbers) > _MAX_SPAN_LINES:
        numbers = numbers[:2] + [-1] + numbers[-1:]
    for number in numbers:
        if number == -1:
            rows.append((0, "", ""))
            continue
        raw = source_line(sources, d.span.path, number) or ""
        start = d.span.col if number == first else len(raw) - len(raw.lstrip()) + 1
        stop = end_col if number == last else len(raw) + 1
        if number == first == last and stop <= start:
            stop = start + 1  # an empty or inverted span still gets one caret
        start = min(max(start, 1), len(raw) + 1)
        stop = min(max(stop, start + 1), len(raw) + 2)
        lead = cell_len(raw[: start - 1].replace("\t", _TAB))
        width = max(1, cell_len(raw[start - 1 : stop - 1].replace("\t", _TAB)))
        rows.append((number, raw.replace("\t", _TAB), " " * lead + "^" * width))
    return rows
