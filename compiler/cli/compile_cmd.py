"""``charter compile PATH [-o plan.json]``: compile a project into a plan.

Exit 0 with the plan written (to stdout without ``-o``); exit 1 on any error,
with the diagnostics on stderr and no plan written; exit 2 on usage or I/O
errors.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", type=Path, help="project directory")
    p.add_argument("-o", "--output", type=Path, help="write the plan here (default: stdout)")
    p.add_argument("--config", type=Path, help="the user config.toml (default: the user's own)")
    p.add_argument("--no-user-config", action="store_true", help="ignore the user's config")
    p.add_argument(
        "--platform",
        choices=("posix", "windows"),
        help="the platform the plan targets (default: this one)",
    )
    p.add_argument("--shell", help="the shell the shell tool names (default: resolved)")


def run(args: argparse.Namespace) -> int:
    from charter.compiler import CompileOptions, compile_project, load_project
    from charter.compiler.render import render

    if not args.path.exists():
        print(f"charter compile: {args.path}: no such directory", file=sys.stderr)
        return 2
    if args.config is not None and not args.config.is_file():
        print(f"charter compile: {args.config}: config file not found", file=sys.stderr)
        return 2
    project = load_project(
        args.path, config=args.config, use_default_config=not args.no_user_config
    )
    options = CompileOptions() if args.platform is None else CompileOptions(args.platform)
    if args.shell:
        options = CompileOptions(options.target_platform, args.shell)
    result = compile_project(project, options)
    diags = [*project.diagnostics, *result.diagnostics]
    shown = [d for d in diags if d.severity.value != "note"]
    if shown:
        sys.stderr.write(render(shown, "concise", sources=project.sources))
    if result.plan is None:
        print("charter compile: no plan written: fix the errors above", file=sys.stderr)
        return 1
    text = result.plan.to_json()
    if args.output is None:
        sys.stdout.write(text)
    else:
        try:
            args.output.write_text(text, encoding="utf-8")
        except OSError as exc:
            print(f"charter compile: cannot write {args.output}: {exc.strerror}", file=sys.stderr)
            return 2
        print(f"wrote {args.output} ({result.plan.digest})", file=sys.stderr)
    return 0
