"""Turning diagnostics into the text a person, an editor or a CI system reads.

One entry point, :func:`render`, with five formats:

``concise``
    ``path:line:col: CODE name: message``, one finding a line, then a summary.
``full``
    Each finding with the source lines around it, a caret under the span, the
    key path and the help. The only format that uses rich, imported lazily.
``json``
    One stable object (``schema`` 1) with ``valid``, the counts and every
    finding, suppressed ones included and marked.
``sarif``
    SARIF 2.1.0 for code-scanning services.
``github``
    GitHub Actions workflow commands that become annotations on a pull request.

Every format is deterministic: the same findings give the same bytes, in file
and position order. Only ``full`` imports anything beyond the standard library,
so ``charter validate`` stays cheap to start in CI.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TextIO

from charter.compiler.diagnostics import Diagnostic
from charter.compiler.errors import UnknownChoice
from charter.compiler.render._common import exit_code

__all__ = ["FORMATS", "default_format", "exit_code", "render", "want_color"]

FORMATS: tuple[str, ...] = ("concise", "full", "json", "sarif", "github")


def render(
    diagnostics: Sequence[Diagnostic],
    fmt: str,
    *,
    sources: Mapping[str, Sequence[str]],
    root_uri: str | None = None,
    color: bool = False,
    suppressed: Sequence[Diagnostic] = (),
    deny_warnings: bool = False,
) -> str:
    """Render ``diagnostics`` (the findings that count) and ``suppressed``
    (silenced ones, shown only by ``json`` and ``sarif``) as ``fmt``.

    ``sources`` maps each display path to its lines, for the excerpts of
    ``full``. ``root_uri`` (a ``file://`` URI ending in ``/``) tells SARIF
    consumers where the repo-relative paths start. ``deny_warnings`` only
    changes the ``valid`` flag of ``json``.
    """
    if fmt == "concise":
        from charter.compiler.render.concise import render_concise

        return render_concise(diagnostics, suppressed)
    if fmt == "full":
        from charter.compiler.render.full import render_full

        return render_full(diagnostics, suppressed, sources, color=color)
    if fmt == "json":
        from charter.compiler.render.json_format import render_json

        return render_json(diagnostics, suppressed, deny_warnings=deny_warnings)
    if fmt == "sarif":
        from charter.compiler.render.sarif import render_sarif

        return render_sarif(diagnostics, suppressed, root_uri=root_uri)
    if fmt == "github":
        from charter.compiler.render.github import render_github

        return render_github(diagnostics)
    raise UnknownChoice(f"unknown output format {fmt!r}; expected one of {', '.join(FORMATS)}")


def default_format(stream: TextIO, environ: Mapping[str, str] | None = None) -> str:
    """The format to use when the user named none.

    Inside GitHub Actions (``GITHUB_ACTIONS=true``) it is ``github``, so a bare
    ``charter validate`` step annotates the pull request; otherwise ``full`` on
    a terminal and ``concise`` when piped, so scripts get one line a finding.
    """
    env = os.environ if environ is None else environ
    if env.get("GITHUB_ACTIONS") == "true":
        return "github"
    return "full" if _isatty(stream) else "concise"


def want_color(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """Colour for ``full``: on a terminal, unless ``NO_COLOR`` is set;
    ``FORCE_COLOR`` turns it on anywhere (both per no-color.org conventions).
    The one rule every verb follows, :func:`charter.runtime.terminal.wants_colour`."""
    from charter.runtime.terminal import wants_colour

    return wants_colour(stream, environ)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or fake stream
        return False
