"""``charter validate``: load and check projects, report every finding.

Exit codes: 0 when there is no error (and no warning under
``--deny-warnings``), 1 when there is, 2 on usage or I/O errors (a path that
does not exist, a config file that cannot be read).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from charter.compiler.cli._options import add_format

if TYPE_CHECKING:
    from charter.compiler.diagnostics import Diagnostic


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", default=["."], metavar="PATH", help="project directories")
    p.add_argument("--config", type=Path, help="the user config.toml (default: the user's own)")
    p.add_argument("--no-user-config", action="store_true", help="ignore the user's config")
    # `text` is the full form (source lines, caret, help), once called `full`.
    add_format(
        p,
        extra=("concise", "sarif", "github"),
        aliases={"full": "text"},
        default=None,
        help="output format (default: text on a terminal, concise otherwise; github in "
        "GitHub Actions)",
    )
    p.add_argument("--deny-warnings", action="store_true", help="fail on warnings too")
    p.add_argument(
        "-q", "--quiet", action="store_true", help="leave out notes: print errors and warnings only"
    )
    p.add_argument("--ignore", action="append", default=[], metavar="CODE", help="ignore a rule")


def run(args: argparse.Namespace) -> int:
    from charter.compiler.check import check_project
    from charter.compiler.frontends.project import load_project
    from charter.compiler.lint.suppress import apply_suppressions
    from charter.compiler.render import default_format, exit_code, render, want_color

    for raw in args.paths:
        if not Path(raw).exists():
            print(f"charter validate: {raw}: no such file or directory", file=sys.stderr)
            return 2
    if args.config is not None and not args.config.is_file():
        print(f"charter validate: {args.config}: config file not found", file=sys.stderr)
        return 2

    from charter.compiler.lint.expectations import project_ignores

    findings: list[Diagnostic] = []
    ignores: list[str] = list(args.ignore)
    sources: dict[str, tuple[str, ...]] = {}
    cwd = Path.cwd().resolve()
    config = _config_shown(args, cwd)
    for raw in args.paths:
        root = Path(raw)
        if root.is_file():  # a file inside a project: validate its agent directory
            root = _agent_dir_of(root)
        project = load_project(root, config=args.config, use_default_config=not args.no_user_config)
        diags = [*project.diagnostics, *check_project(project)]
        ignores.extend(project_ignores(project))
        prefix = _prefix(project.root, cwd)
        for d in diags:
            findings.append(_rebase(d, _shown(d.span.path, prefix, config)))
        for path, lines in project.sources.items():
            sources[_shown(path, prefix, config)] = lines
    kept, suppressed = apply_suppressions(findings, sources, ignores)
    if args.quiet:
        from charter.compiler.diagnostics import Severity

        kept = [d for d in kept if d.severity is not Severity.NOTE]
    fmt = args.format or default_format(sys.stdout)
    if fmt == "text":
        fmt = "full"  # the renderer's name for it
    color = want_color(sys.stdout)  # full only: on a terminal, NO_COLOR / FORCE_COLOR
    sys.stdout.write(render(kept, fmt, sources=sources, suppressed=suppressed, color=color))
    return exit_code(kept, deny_warnings=args.deny_warnings)


def _agent_dir_of(path: Path) -> Path:
    """The agent directory a file belongs to: the nearest folder above it
    holding agent.yaml or a blueprint. A stage file (stages/x.toml), a tool
    (agent/tools/x/tool.yaml) or an MCP manifest (agent/mcp/x.yaml) is
    validated with its whole agent, since none means anything alone. A file
    in no agent directory is looked at where it is (and reported as such)."""
    from charter.compiler.frontends.project import is_agent_dir

    start = path.resolve().parent
    for folder in (start, *start.parents):
        if is_agent_dir(folder):
            return folder
    return path.parent


def _shown(path: str, prefix: str, config: str | None) -> str:
    """A finding's path as the reader sees it. A config outside the project
    is "<config>/NAME" in the plan (which names no machine path); a person is
    shown the real file."""
    if config is not None and path.startswith("<config>/"):
        return config
    return prefix + path if path != "." else (prefix or ".")


def _config_shown(args: argparse.Namespace, cwd: Path) -> str | None:
    """The user config file as a reader finds it: relative to the working
    directory when below it, else absolute; None when none is read."""
    from charter.compiler.frontends.config_toml import default_config_path

    path = args.config if args.config is not None else None
    if path is None and not args.no_user_config:
        path = default_config_path()
    if path is None:
        return None
    real = Path(path).resolve()
    try:
        return real.relative_to(cwd).as_posix()
    except ValueError:
        return real.as_posix()


def _prefix(root: Path, cwd: Path) -> str:
    """Display paths are relative to the project root; show them relative to
    the working directory, as linters do, when the root is below it."""
    try:
        rel = root.relative_to(cwd).as_posix()
    except ValueError:
        return root.as_posix().rstrip("/") + "/"
    return "" if rel == "." else rel + "/"


def _rebase(d: Diagnostic, path: str) -> Diagnostic:
    return d._replace(span=d.span.with_path(path))
